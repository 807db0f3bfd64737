"""Where ranks run: a machine's cores and memory are shared by every rank on it, whichever
torchrun node it belongs to; a GPU is LOCAL_RANK's within its node."""

from __future__ import annotations

from gpuvs.distributed.hosts import Layout, Place, spans

# Two nodes simulated on machine "a" (ranks 0–3), and a second machine "b" (ranks 4–5).
LAYOUT = Layout((Place("a", 0, "cpu"), Place("a", 0, "cpu"), Place("a", 1, "cpu"),
                 Place("a", 1, "cpu"), Place("b", 2, "cpu"), Place("b", 2, "cpu")))


def test_a_machines_ranks_are_counted_across_its_nodes() -> None:
    assert [LAYOUT.on_host(r) for r in range(6)] == [4, 4, 4, 4, 2, 2]
    # Scaling's N = 3 takes ranks 0–2: three on "a", none of them on "b".
    assert LAYOUT.on_host(0, among=3) == 3 and LAYOUT.on_host(4, among=3) == 0


def test_each_machine_is_looked_at_by_its_first_rank_only() -> None:
    assert [LAYOUT.first_on_host(r) for r in range(6)] == [True, False, False, False, True,
                                                           False]


def test_nodes_are_said_as_nodes_times_ranks_and_where() -> None:
    assert LAYOUT.nodes == 3 and LAYOUT.hosts == ("a", "b")
    assert LAYOUT.described() == "3 nodes × 2 ranks on 2 machines (a, b)"
    assert Layout(LAYOUT.places[:2]).described() == ""  # one node: nothing to say
    assert spans(3, per_node=2) == 2 and spans(2, per_node=2) == 1 and spans(1, 8) == 1


def test_two_nodes_that_would_share_a_gpu_are_named() -> None:
    shared = Layout((Place("a", 0, "cuda:0", "GPU-1"), Place("a", 1, "cuda:0", "GPU-1")))
    assert shared.shared_gpu().startswith("ranks 0 and 1 on a would both use GPU GPU-1")
    apart = Layout((Place("a", 0, "cuda:0", "GPU-1"), Place("a", 1, "cuda:0", "GPU-2"),
                    Place("b", 2, "cuda:0", "GPU-1")))  # the same UUID elsewhere: no card
    assert apart.shared_gpu() == ""


def test_busy_machines_are_named_by_host() -> None:
    busy = Layout((Place("a", 0, "cpu"), Place("b", 1, "cpu", busy="load 9.0 on 2 cores")))
    assert busy.busy() == ("b: load 9.0 on 2 cores",)
