"""Two probes behind `gpuvs dist`'s design, run on a machine with two GPUs.

`hang`: which process-group set-up hangs. Each variant runs in its own two-rank
torchrun under a deadline and prints `ok` or where the ranks stood when it was killed:
  eager-gloo  init_process_group(nccl, device_id=…) then a Gloo sub-group of rank 0
              (what gpuvs did for scaling's N = 1 before it launched each N on its own)
  eager-nccl  the same with an NCCL sub-group only
  lazy-gloo   no device_id, then the Gloo sub-group (what gpuvs does inside a user's torchrun)

`samples`: why small collectives got CIs of ±100 % and more. Two ranks time an all-reduce
of 4 KiB and of 1 MiB by the old protocol (a barrier and a device sync around every
sample) and by the current one (`gpuvs.distributed.rank.batch`: a barrier, an untimed
loop, events back to back), 200 samples each, and print per protocol the median, the
share of samples over 1.5× it, and the bootstrap CI of the median over the first 10
samples and over all of them. Raw per-rank samples go to $OUT/dist-probe-samples.json.

`modes`: whether the per-call time of a small all-reduce moves between regimes over
seconds, and with which CPUs. Two ranks take 30 batches of a 4 KiB all-reduce, 0.2 s
apart, and print each batch's median (slowest rank) and the CPU each rank's thread was
on; unpinned, each rank on half of the CPUs, and each rank on four CPUs of its own.

    python3 benchmarks/dist_probe.py hang
    python3 benchmarks/dist_probe.py samples
    python3 benchmarks/dist_probe.py modes
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

VARIANTS = ("eager-gloo", "eager-nccl", "lazy-gloo")
DEADLINE_S = 40
SAMPLES = 200
SIZES = (4096, 1024**2)


def _torchrun(*args: str, deadline: float) -> tuple[str, str, float]:
    """(verdict, output, seconds) of a two-rank torchrun of this file, killed with all
    its ranks at the deadline."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc-per-node=2", __file__, *args]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=deadline)
        verdict = "ok" if proc.returncode == 0 else f"exit code {proc.returncode}"
    except subprocess.TimeoutExpired:
        from gpuvs.distributed.launch import kill_tree
        kill_tree(proc)  # the ranks too: torchrun starts each in a session of its own
        out, _ = proc.communicate()
        verdict = f"hung (killed after {deadline:g} s)"
    return verdict, out, time.monotonic() - start


def _say(text: str) -> None:
    print(f"step rank {os.environ['RANK']}: {text}", file=sys.stderr, flush=True)


def _rank_hang(variant: str) -> None:
    import torch
    import torch.distributed as dist

    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    eager = {"device_id": torch.device(f"cuda:{local}")} if variant.startswith("eager") else {}
    dist.init_process_group("nccl", timeout=timedelta(seconds=DEADLINE_S * 2), **eager)
    _say("init_process_group done")
    ctrl = dist.new_group(backend="gloo")
    _say("world gloo group done")
    dist.new_group([0], backend="nccl")
    _say("nccl sub-group [0] done")
    if variant.endswith("gloo"):
        dist.new_group([0], backend="gloo")
        _say("gloo sub-group [0] done")
    found: list[object] = [None, None]
    dist.all_gather_object(found, os.environ["RANK"], group=ctrl)
    _say(f"all_gather_object done: {found}")
    dist.destroy_process_group()


def _old_protocol(r, call, loops: int) -> float:  # type: ignore[no-untyped-def]
    import torch

    from gpuvs.distributed.rank import barrier
    barrier(r)
    torch.cuda.synchronize(r.device)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(loops):
        call()
    end.record()
    torch.cuda.synchronize(r.device)
    return begin.elapsed_time(end) / 1e3 / loops


def _rank_samples() -> None:
    import torch
    import torch.distributed as dist

    from gpuvs.distributed.rank import Ranks, batch, calibrate, every_rank
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    r = Ranks(rank, 2, local, f"cuda:{local}", dist.group.WORLD, dist.new_group(backend="gloo"),
              0)
    found = {}
    for size in SIZES:
        t = torch.zeros(size // 4, device=r.device)

        def call(t=t) -> None:  # type: ignore[no-untyped-def]
            dist.all_reduce(t)

        for _ in range(3):
            call()
        loops = calibrate(r, call)
        old = [_old_protocol(r, call, loops) for _ in range(SAMPLES)]
        new: list[float] = []
        while len(new) < SAMPLES:
            new += batch(r, call, loops, 20)[0]
        found[size] = {"loops": loops, "old": every_rank(r, old), "new": every_rank(r, new)}
    if rank == 0:
        _report(found)
    dist.destroy_process_group()


def _cpu() -> int:
    """The CPU this thread last ran on (/proc's `processor` field)."""
    return int(Path("/proc/thread-self/stat").read_text().rsplit(")", 1)[1].split()[36])


def _rank_modes(pin: str) -> None:
    import numpy as np
    import torch
    import torch.distributed as dist

    from gpuvs.distributed.rank import Ranks, batch, every_rank
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    cpus = sorted(os.sched_getaffinity(0))
    if pin == "halves":
        half = len(cpus) // 2
        os.sched_setaffinity(0, cpus[local * half:(local + 1) * half])
    elif pin == "cores":
        os.sched_setaffinity(0, cpus[local * 4:(local + 1) * 4])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    r = Ranks(rank, 2, local, f"cuda:{local}", dist.group.WORLD, dist.new_group(backend="gloo"),
              0)
    t = torch.zeros(1024, device=r.device)
    for _ in range(20):
        dist.all_reduce(t)
    rows = []
    for _ in range(30):
        time.sleep(0.2)
        got = batch(r, lambda: dist.all_reduce(t), 150, 10)[0]
        rows.append((float(np.median(got)), _cpu()))
    every = every_rank(r, rows)
    if rank == 0:
        meds = [max(a[0], b[0]) * 1e6 for a, b in zip(*every, strict=True)]
        cpus_seen = [(a[1], b[1]) for a, b in zip(*every, strict=True)]
        print(f"modes {pin}: batch medians µs " + " ".join(f"{m:.0f}" for m in meds))
        print(f"modes {pin}: cpus " + " ".join(f"{a}/{b}" for a, b in cpus_seen))
    dist.destroy_process_group()


def _report(found: dict[int, dict]) -> None:  # type: ignore[type-arg]
    import numpy as np

    from gpuvs.distributed.rank import per_sample_max
    from gpuvs.stats import summarize
    out = Path(os.environ.get("OUT", "out"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "dist-probe-samples.json").write_text(json.dumps(found))
    for size, d in found.items():
        for how in ("old", "new"):
            worst = per_sample_max(d[how])
            whole, first = summarize(worst), summarize(worst[:10])
            slow = float(np.mean(np.asarray(worst) > 1.5 * whole.median))
            ranks = ", ".join(f"rank {i} median {1e6 * np.median(s):.1f} µs"
                              for i, s in enumerate(d[how]))
            print(f"{size:>8} B {how}: loops {d['loops']}, median {1e6 * whole.median:.1f} µs, "
                  f"{100 * slow:.0f}% of samples over 1.5× it, CI of the first 10 "
                  f"±{100 * first.ci_halfwidth_rel:.1f}%, of all {len(worst)} "
                  f"±{100 * whole.ci_halfwidth_rel:.1f}% ({ranks})", flush=True)


def main() -> None:
    what = sys.argv[1]
    if "RANK" in os.environ:
        if what == "hang":
            _rank_hang(sys.argv[2])
        elif what == "modes":
            _rank_modes(sys.argv[2])
        else:
            _rank_samples()
        return
    if what == "hang":
        for variant in VARIANTS:
            verdict, out, took = _torchrun("hang", variant, deadline=DEADLINE_S)
            steps = [line for line in out.splitlines() if line.startswith("step ")]
            print(f"{variant}: {verdict} ({took:.1f} s); last steps: "
                  f"{' | '.join(steps[-4:])}", flush=True)
    elif what == "modes":
        for pin in ("none", "halves", "cores"):
            verdict, out, took = _torchrun("modes", pin, deadline=90)
            print("\n".join(line for line in out.splitlines() if line.startswith("modes")))
            print(f"modes {pin}: {verdict} ({took:.1f} s)", flush=True)
    else:
        verdict, out, took = _torchrun("samples", deadline=300)
        report = [line for line in out.splitlines() if " B old:" in line or " B new:" in line]
        print("\n".join(report or out.splitlines()[-30:]))
        print(f"samples: {verdict} ({took:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
