#!/usr/bin/env bash
# The foundation's checks on a GPU machine, in one call (device time is scarce):
#   1. the GPU test suite;  2. `gpuvs env`;  3. matmul + elementwise on every backend;
#   4. a run killed with SIGKILL halfway, then finished with --resume.
# Outputs go to $OUT (or ./out). Run from the repository root:
#   PYTHONPATH=src bash benchmarks/gpu_acceptance.sh
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1
DB="$OUT/gpuvs.sqlite"
gpuvs() { python3 -m gpuvs "$@"; }

echo "== pytest -m gpu"
python3 -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/pytest-gpu.log" | tail -15

echo "== gpuvs env"
COLUMNS=160 gpuvs env 2>&1 | tee "$OUT/env.txt"

echo "== gpuvs run matmul + elementwise"
COLUMNS=200 gpuvs run --workload matmul --workload elementwise \
  --sizes "${SIZES:-1e3:1e9}" --budget "${BUDGET:-0.5}" --db "$DB" \
  --json "$OUT/run.json" 2>&1 | tee "$OUT/run.txt" | tail -80

echo "== kill -9 halfway, then --resume"
KDB="$OUT/kill.sqlite"
gpuvs run -w matmul -s 256:4096:2 --budget 0.5 --db "$KDB" >"$OUT/killed.txt" 2>&1 &
pid=$!
for _ in $(seq 1 120); do
  n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from measurements').fetchone()[0])" "$KDB" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 8 ] && break
  sleep 0.5
done
kill -9 "$pid"; wait "$pid" 2>/dev/null  # workers see stdin close and exit on their own
run_id=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select run_id from runs').fetchone()[0])" "$KDB")
echo "killed run $run_id after $n recorded cases"
COLUMNS=200 gpuvs run --resume "$run_id" --db "$KDB" 2>&1 | tee "$OUT/resumed.txt" | grep -E "already recorded|finished"
