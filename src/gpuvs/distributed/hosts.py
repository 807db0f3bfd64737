"""Where each rank runs: its machine, its torchrun node, its device — asked of every rank
once, when the ranks meet.

torchrun's LOCAL_RANK and LOCAL_WORLD_SIZE count the ranks of one node (one agent). A
machine can hold several nodes: two agents on one host is how two nodes are simulated,
and how the tests run them. Its cores and its memory are shared by the ranks of every
node on it, so what is the host's is counted over the machine's ranks, not the node's:
the CPU threads each rank takes, the host memory a collective's buffers need, and
whether the machine is busy, which its first rank looks at once for all of them. A GPU
is chosen by LOCAL_RANK within its node; two ranks of one machine that would take the
same GPU (two simulated nodes without a CUDA_VISIBLE_DEVICES each) are found here, before
NCCL hangs or fails on them.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

# torchrun's number of the node (its agent) a rank belongs to, and how many nodes there are.
NODE_VARIABLE = "GROUP_RANK"
NODES_VARIABLE = "GROUP_WORLD_SIZE"


@dataclass(frozen=True)
class Place:
    """One rank's machine, torchrun node, device, and what its machine's first rank
    found of other processes' load ('' when quiet, or when not the first)."""

    host: str
    node: int
    device: str  # "cpu", or "cuda:LOCAL_RANK"
    gpu: str = ""  # the GPU's UUID: the same card whatever CUDA_VISIBLE_DEVICES calls it
    busy: str = ""


def here(device: str) -> Place:
    """This rank's place (the GPU's UUID read through torch on CUDA)."""
    gpu = ""
    if device.startswith("cuda"):
        import torch

        gpu = str(getattr(torch.cuda.get_device_properties(device), "uuid", ""))
    return Place(socket.gethostname(), int(os.environ.get(NODE_VARIABLE, "0")), device, gpu)


@dataclass(frozen=True)
class Layout:
    """Every rank's place, by rank."""

    places: tuple[Place, ...]

    def on_host(self, rank: int, among: int | None = None) -> int:
        """How many of ranks 0…among−1 (all, by default) run on `rank`'s machine."""
        host = self.places[rank].host
        return sum(p.host == host for p in self.places[:among])

    def first_on_host(self, rank: int) -> bool:
        """Whether `rank` is its machine's lowest rank: the one that looks at the host."""
        return self.places[rank].host not in {p.host for p in self.places[:rank]}

    @property
    def nodes(self) -> int:
        return len({p.node for p in self.places})

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.host for p in self.places))

    def shared_gpu(self) -> str:
        """'' — or why two ranks of one machine would take the same GPU."""
        seen: dict[tuple[str, str], int] = {}
        for rank, p in enumerate(self.places):
            if not p.gpu:
                continue
            first = seen.setdefault((p.host, p.gpu), rank)
            if first != rank:
                return (f"ranks {first} and {rank} on {p.host} would both use GPU {p.gpu} "
                        f"(LOCAL_RANK picks the GPU within each node): give each node on one "
                        "machine GPUs of its own, e.g. CUDA_VISIBLE_DEVICES=0 for one "
                        "torchrun and CUDA_VISIBLE_DEVICES=1 for the other")
        return ""

    def described(self) -> str:
        """'2 nodes × 2 ranks on one machine (h)', '2 nodes × 2 ranks on 2 machines (a,
        b)'; '' for a single node."""
        if self.nodes < 2:
            return ""
        per = len(self.places) // self.nodes
        where = (f"one machine ({self.hosts[0]})" if len(self.hosts) == 1 else
                 f"{len(self.hosts)} machines ({', '.join(self.hosts)})")
        return f"{self.nodes} nodes × {per} ranks on {where}"

    def busy(self) -> tuple[str, ...]:
        """What each busy machine's first rank said, named by its host."""
        return tuple(f"{p.host}: {p.busy}" for p in self.places if p.busy)


def spans(ranks: int, per_node: int) -> int:
    """How many nodes ranks 0…ranks−1 take: torchrun numbers the ranks node by node
    (`_assign_worker_ranks`: each node's ranks follow the lower nodes')."""
    return -(-ranks // max(1, per_node))
