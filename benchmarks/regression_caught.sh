#!/usr/bin/env bash
# Issue 40's "a real regression is still caught", on a GPU machine: one function measured
# with `gpuvs run-file`, then measured again unchanged, then again slowed by 20 % —
# launch-bound (12 small ops a call instead of 10) and device-bound (six 4096² products
# instead of five). `gpuvs check` must pass the unchanged rerun (exit 0) and fail the
# slowed one (exit 1). From the repository root:
#   PYTHONPATH=src OUT=out bash benchmarks/regression_caught.sh
# (DEVICE=cpu KINDS="launch 10 12 10000" tries the launch-bound part on a CPU; PASSES=20
# samples each function in 20 processes instead of the default 5.)
# Across two machines of one kind: run it on the first, keep $OUT/regression/*-a.json,
# carry them to the second and run it there with BASELINE_FROM=that folder: the
# unchanged and slowed runs there are checked against the first machine's exports, each
# run-file run carrying its calibration.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/regression"
DB="$OUT/regression/runs.sqlite"
gpuvs() { python3 -m gpuvs "$@"; }

write() {  # write KIND COUNT: the function file as its author would edit it
  local kind=$1 count=$2 file="$OUT/regression/$1.py"
  if [ "$kind" = launch ]; then
    cat >"$file" <<PY
import torch

def inputs(size):
    return (torch.ones(size),)

def work(x):
    for _ in range($count):  # small elementwise ops: the host issuing them sets the pace
        x = x * 1.0001
    return x
PY
  else
    cat >"$file" <<PY
import torch

def inputs(size):
    g = torch.Generator().manual_seed(0)
    return (torch.randn(size, size, generator=g) / size ** 0.5,)

def work(m):
    y = m
    for _ in range($count):  # big products: the device sets the pace
        y = m @ m
    return y
PY
  fi
}

measure() {  # measure KIND SIZE LABEL: one run-file run; prints its run id
  gpuvs run-file "$OUT/regression/$1.py::work" --sizes "$2" -d "${DEVICE:-cuda}" --budget 1 ${PASSES:+--passes "$PASSES"} \
    --db "$DB" --json "$OUT/regression/$1-$3.json" >"$OUT/regression/$1-$3.txt" 2>&1
  python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['run']['run_id'])" \
    "$OUT/regression/$1-$3.json"
}

specs=("launch 10 12 10000" "device 5 6 4096")
[ -n "${KINDS:-}" ] && specs=("$KINDS")
for spec in "${specs[@]}"; do
  set -- $spec
  kind=$1
  write "$kind" "$2"
  if [ -n "${BASELINE_FROM:-}" ]; then a="$BASELINE_FROM/$kind-a.json"
  else a=$(measure "$kind" "$4" a); fi
  again=$(measure "$kind" "$4" again)
  write "$kind" "$3"; slow=$(measure "$kind" "$4" slow)
  for pair in "again unchanged" "slow slowed-20%"; do
    set -- $pair
    run=$again; [ "$1" = slow ] && run=$slow
    gpuvs check --baseline "$a" --run "$run" --db "$DB" >"$OUT/regression/$kind-check-$1.txt" 2>&1
    echo "$kind, $2: check exit $?: $(tail -1 "$OUT/regression/$kind-check-$1.txt" | cut -c1-300)"
  done
done
