#!/usr/bin/env bash
# `gpuvs dist` on a machine with two or more GPUs. Steps (default: the two-GPU set, in
# this order); a step whose name ends in a number N runs on N ranks:
#   probe     benchmarks/dist_probe.py: which process-group set-up hangs; old vs new sampling
#   tests     pytest -m gpu tests/distributed (NCCL collectives and DDP scaling on two GPUs)
#   env       GPUs, their topology, and the NCCL variables the ranks will inherit
#   collN     gpuvs dist collectives --backend nccl --nproc N (1 KiB … 1 GiB, ×4)
#   repeatN   collN again up to 4 MiB: are the small-message medians steady across runs?
#   scalingN  gpuvs dist scaling --backend nccl --nproc N (weak, batch 32/GPU; every rank
#             count from 1 to N in 10 interleaved rounds of 10 steps: the defaults)
#   strongN   the same with --strong (a global batch of 32)
#   roundsN   scalingN three times over: is each efficiency's interval ±5 points or less,
#             and do the three overlap? (issue 45's target on two H100s: rounds2)
#   faults    rank 1 killed in one case, hung in another, hung in set-up: crashed, timeout
#   orphans   `gpuvs dist` itself killed (SIGKILL) mid-case: no torchrun, no rank 10 s later
#   nodes     two simulated nodes, one GPU each (a CUDA_VISIBLE_DEVICES per torchrun
#             agent, a c10d rendezvous on localhost): collectives and scaling, --launched
#   nodefault the same two nodes, node 1's agent killed mid-case: what node 0 records
#   plots     the scaling and bandwidth SVGs of the runs above
# Each step writes its table text, `gpuvs export RUN --format json` and a summary to
# $OUT (or ./out). From the repository root:
#   PYTHONPATH=src bash benchmarks/dist_gpu.sh [STEP...]
# On four GPUs: bash benchmarks/dist_gpu.sh env coll4 scaling4 strong4 plots
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
# NVLink multicast (NVLS) stays off, as on the lent machines; the ranks inherit it.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-200}
DB="$OUT/dist.sqlite"
gpuvs() { python3 -m gpuvs "$@"; }
run_id() { grep -m1 '^run ' "$1" | awk '{print $2}' | tr -d ':'; }

# A gpuvs dist command whose output goes to $OUT/NAME.txt, its run to $OUT/NAME.json.
measure() {
  local name=$1; shift
  gpuvs dist "$@" --db "$DB" >"$OUT/$name.txt" 2>"$OUT/$name.err"
  echo "exit code $?"
  local id; id=$(run_id "$OUT/$name.txt")
  gpuvs export "$id" --format json --output "$OUT/$name.json" --db "$DB" >/dev/null
  echo "$id" >"$OUT/$name.run_id"
  grep -E "^ranks:|finished:" "$OUT/$name.txt"
}

# The tables of a step's output: everything between the first and the last line.
tables() { sed '1d;$d' "$OUT/$1.txt" | grep -v "^ranks:"; }

step_probe() {
  python3 benchmarks/dist_probe.py hang
  python3 benchmarks/dist_probe.py samples
}
step_tests() {
  python3 -m pytest -m gpu -v -p no:cacheprovider tests/distributed >"$OUT/pytest-dist-gpu.log" 2>&1
  grep -E "PASSED|FAILED|SKIPPED|ERROR" "$OUT/pytest-dist-gpu.log" | sed 's/ *\[.*%\]//'
  tail -1 "$OUT/pytest-dist-gpu.log"
}
step_env() {
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  nvidia-smi topo -m 2>/dev/null | head -12
  env | grep -E "^(TORCH_)?NCCL_" | sort
  python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
}
step_coll() { measure "coll$1" collectives --backend nccl --nproc "$1"; tables "coll$1"; }
step_repeat() {
  measure "repeat$1" collectives --backend nccl --nproc "$1" --sizes 1KiB:4MiB:4
  tables "repeat$1"
}
step_scaling() { measure "scaling$1" scaling --backend nccl --nproc "$1"; tables "scaling$1"; }
step_strong() {
  measure "strong$1" scaling --backend nccl --nproc "$1" --strong; tables "strong$1"
}
step_rounds() {
  for i in 1 2 3; do measure "rounds$1-$i" scaling --backend nccl --nproc "$1"; done
  python3 - "$DB" "$OUT" "$1" <<'EOF'
import sys
from pathlib import Path
from gpuvs.analysis import scaling
from gpuvs.store import open_store
store, out, n = open_store(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
spans = []
for i in (1, 2, 3):
    ms = store.measurements((out / f"rounds{n}-{i}.run_id").read_text().strip())
    for k in range(2, n + 1):
        e = scaling.efficiency(ms, k)
        if e is None:
            print(f"repeat {i}: N = {k}: no efficiency")
            continue
        spans.append((k, e.low, e.high))
        print(f"repeat {i}: N = {k}: {100 * e.estimate:.1f} % [{100 * e.low:.1f}, "
              f"{100 * e.high:.1f}] (±{50 * (e.high - e.low):.1f} points over {e.rounds} rounds)")
for k in range(2, n + 1):
    mine = [(lo, hi) for j, lo, hi in spans if j == k]
    if mine:
        common = max(lo for lo, _ in mine) <= min(hi for _, hi in mine)
        print(f"N = {k}: the intervals {'overlap' if common else 'do NOT all overlap'}")
EOF
}
step_faults() {
  GPUVS_DIST_FAULT="exit:1:/1048576,collective=all_gather;hang:1:/16777216,collective=all_reduce" \
    measure faults collectives --backend nccl --nproc 2 --sizes 1MiB,16MiB,64MiB \
    -c all_reduce,all_gather --timeout 30
  grep -E "crashed|timeout" "$OUT/faults.txt"
  GPUVS_DIST_FAULT="hang:1:setup" measure setup-hang collectives --backend nccl --nproc 2 \
    --sizes 1MiB -c all_reduce --setup-timeout 30
  grep -E "timeout" "$OUT/setup-hang.txt"
  echo "ranks left behind: $(pgrep -fc gpuvs.distributed.rank_main || true)"
}
step_orphans() {
  GPUVS_DIST_FAULT="hang:1:/16777216,collective=all_reduce" python3 -m gpuvs dist \
    collectives --backend nccl --nproc 2 --sizes 1MiB,16MiB -c all_reduce --timeout 600 \
    --db "$DB" >"$OUT/orphans.txt" 2>&1 &
  local parent=$!
  sleep 60  # set-up and the first case; rank 1 then sleeps in the second
  left() {
    echo "$(pgrep -fc -- '-u -m gpuvs.distributed.rank_main' || true) ranks," \
      "$(pgrep -fc gpuvs.distributed.agent || true) torchrun," \
      "$(ls -d "${TMPDIR:-/tmp}"/gpuvs-dist-* "${TMPDIR:-/tmp}"/torchelastic_* 2>/dev/null |
         wc -l) gpuvs-dist-*/torchelastic_* folders in TMPDIR"
  }
  echo "before: $(left)"
  kill -KILL "$parent"
  sleep 10
  echo "10 s after SIGKILL of gpuvs: $(left)"
}

# Two simulated nodes of one GPU each, a c10d rendezvous on localhost: NAME, then the
# gpuvs dist arguments (FAULT=… is planted on the ranks; KILL_AFTER=S kills the agent of
# rank 1 S seconds after the first case is saved). The node of rank 0 prints the tables.
two_nodes() {
  local name=$1; shift
  local port=$((29500 + RANDOM % 2000)) pids=() holder=""
  for node in 0 1; do
    CUDA_VISIBLE_DEVICES=$node GPUVS_DIST_FAULT=${FAULT:-} python3 -m torch.distributed.run \
      --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint "localhost:$port" \
      --rdzv-id "gpuvs-$name-$port" --log-dir "$OUT/$name-logs$node" -m gpuvs dist "$@" \
      --launched --backend nccl --db "$DB" >"$OUT/$name-node$node.txt" 2>&1 &
    pids+=($!)
  done
  if [ -n "${KILL_AFTER:-}" ]; then  # once the first case is saved, plus KILL_AFTER s
    for _ in $(seq 300); do grep -q '^\[1/' "$OUT/$name"-node*.txt && break; sleep 1; done
    sleep "$KILL_AFTER"
    for pid in "${pids[@]}"; do
      for child in $(pgrep -P "$pid"); do
        tr '\0' '\n' <"/proc/$child/environ" 2>/dev/null | grep -qx 'RANK=1' && holder=$pid
      done
    done
    echo "killing the agent of rank 1 ($holder) at $(date +%T)"; kill -KILL "$holder"
  fi
  wait
  local id; id=$(cat "$OUT/$name"-node*.txt | grep -m1 '^run ' | awk '{print $2}' | tr -d ':')
  gpuvs export "$id" --format json --output "$OUT/$name.json" --db "$DB" >/dev/null
  echo "$id" >"$OUT/$name.run_id"
  grep -h -E "^ranks:|finished:|took part|ended:|could not go on" "$OUT/$name"-node*.txt
}
step_nodes() {
  two_nodes nodes-coll collectives
  two_nodes nodes-scaling scaling
  grep -h -A16 -E "^dist (·|scaling ·).*2 nodes × 1" "$OUT"/nodes-*-node*.txt
}
step_nodefault() {
  # From 64 MiB a case is sampled at once, not in turns: the first is saved before the
  # second starts, and rank 1 sleeps in the second.
  FAULT="hang:1:/268435456,collective=all_reduce" KILL_AFTER=3 two_nodes nodefault \
    collectives --sizes 64MiB,256MiB,1GiB -c all_reduce --timeout 60
  grep -h -E "crashed|timeout|skipped" "$OUT"/nodefault-node*.txt
  sleep 10
  echo "left behind: $(pgrep -fc -- '--launched' || true) processes"
}
step_plots() {
  python3 - "$DB" "$OUT" <<'EOF'
import sys
from pathlib import Path
from gpuvs.report.dist_plots import bandwidth_svg, scaling_svg
from gpuvs.store import open_store
store, out = open_store(sys.argv[1]), Path(sys.argv[2])
for run_file in sorted(out.glob("*.run_id")):
    name = run_file.stem
    draw = (scaling_svg if name.startswith(("scaling", "strong", "rounds", "nodes-scaling"))
            else bandwidth_svg)
    if name.startswith(("coll", "scaling", "strong", "rounds", "nodes")):
        svg = draw(store.measurements(run_file.read_text().strip()))
        (out / f"{name}.svg").write_text(svg)
        print(f"{name}.svg: {len(svg)} characters")
EOF
}

for step in "${@:-probe tests env coll1 coll2 repeat2 scaling2 strong2 rounds2 faults orphans nodes nodefault plots}"; do
  for s in $step; do
    echo "== $s ($(date +%T))"
    n=${s##*[!0-9]}  # the trailing rank count, if any
    if [ -n "$n" ] && [ "$n" != "$s" ]; then "step_${s%"$n"}" "$n"; else "step_$s"; fi
  done
done
