#!/usr/bin/env bash
# `gpuvs dist` on a machine with two or more GPUs. Steps (default: the two-GPU set, in
# this order); a step whose name ends in a number N runs on N ranks:
#   probe     benchmarks/dist_probe.py: which process-group set-up hangs; old vs new sampling
#   tests     pytest -m gpu tests/distributed (NCCL collectives and DDP scaling on two GPUs)
#   env       GPUs, their topology, and the NCCL variables the ranks will inherit
#   collN     gpuvs dist collectives --backend nccl --nproc N (1 KiB … 1 GiB, ×4)
#   repeatN   collN again up to 4 MiB: are the small-message medians steady across runs?
#   scalingN  gpuvs dist scaling --backend nccl --nproc N --steps 50 (weak, batch 32/GPU;
#             every rank count from 1 to N)
#   strongN   the same with --strong (a global batch of 32)
#   faults    rank 1 killed in one case, hung in another, hung in set-up: crashed, timeout
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
step_scaling() {
  measure "scaling$1" scaling --backend nccl --nproc "$1" --steps 50; tables "scaling$1"
}
step_strong() {
  measure "strong$1" scaling --backend nccl --nproc "$1" --steps 50 --strong; tables "strong$1"
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
step_plots() {
  python3 - "$DB" "$OUT" <<'EOF'
import sys
from pathlib import Path
from gpuvs.report.dist_plots import bandwidth_svg, scaling_svg
from gpuvs.store import open_store
store, out = open_store(sys.argv[1]), Path(sys.argv[2])
for run_file in sorted(out.glob("*.run_id")):
    name = run_file.stem
    draw = scaling_svg if name.startswith(("scaling", "strong")) else bandwidth_svg
    if name.startswith(("coll", "scaling", "strong")):
        svg = draw(store.measurements(run_file.read_text().strip()))
        (out / f"{name}.svg").write_text(svg)
        print(f"{name}.svg: {len(svg)} characters")
EOF
}

for step in "${@:-probe tests env coll1 coll2 repeat2 scaling2 strong2 faults plots}"; do
  for s in $step; do
    echo "== $s ($(date +%T))"
    n=${s##*[!0-9]}  # the trailing rank count, if any
    if [ -n "$n" ] && [ "$n" != "$s" ]; then "step_${s%"$n"}" "$n"; else "step_$s"; fi
  done
done
