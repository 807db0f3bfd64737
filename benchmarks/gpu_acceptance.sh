#!/usr/bin/env bash
# The foundation's checks on a GPU machine. Steps (default: all, in this order):
#   tests       the GPU test suite (pytest -m gpu)
#   env         gpuvs env
#   matmul      gpuvs run -w matmul (seed 000's product and n = 64..2048) on every backend
#   sweep       gpuvs sweep matmul -s 64:4096:2 --refine (crossovers, resident and end-to-end)
#   elementwise gpuvs sweep elementwise over 1e3..1e9 elements --refine
#   kill        a run killed with SIGKILL halfway, then finished with --resume
#   energy      energy per call against NVML's instantaneous power (benchmarks/energy.py)
#   seed3       gpuvs seeds --seed 3 --energy --quick: joules per training step on the GPU
#   observation which observations slow a timed process; fresh processes' spread
#   quicktests  the GPU tests of the measuring path, energy, memory and prediction
#   seeds       the full `gpuvs seeds`, timed, exported to $OUT/seeds.json; with
#               SEEDS_BASELINE=an earlier one's export (carried from the call before, on
#               this VM or another of its kind), then checked and compared against it
#   peers       benchmarks/peers.py: gpuvs against the peers, ten repeats
#   profile     gpuvs ceilings --save-profile $PROFILE into $GPUVS_PROFILES
#   runall      gpuvs run --all at budget 0.1, one pass, exported to $OUT/run-all.json
#   hallways    the GPU tests of what crosses processes: the worker, run-file, compare, the
#               magic, the fixture, observation, memory, predict's profiles
#   versions    docs/your-code.md's three versions of a row softmax side by side
#   default     the default `gpuvs run`, timed and exported to $OUT/default.json
#   calibration the GPU tests of the calibration's probes
#   twice       the first-answer suite on NumPy and torch twice, then check and compare
#               (TWICE="" for the default run twice; TWICE names its arguments;
#               PROFILED=1 keeps each run's parent process's profile, parent-a.prof)
#   (these run only when named: bash benchmarks/gpu_acceptance.sh energy seed3 …)
# Outputs go to $OUT (or ./out). From the repository root:
#   PYTHONPATH=src bash benchmarks/gpu_acceptance.sh [STEP...]
set -uo pipefail
OUT=${OUT:-out}
BUDGET=${BUDGET:-0.5}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-200}
DB="$OUT/gpuvs.sqlite"
gpuvs() { python3 -m gpuvs "$@"; }
run_of() {  # run_of EXPORT: the run id an export holds
  python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['run']['run_id'])" "$1"
}
judged() {  # judged A B DB NAME: `check` B against A, then `compare`, into $OUT/NAME-*
  gpuvs check --baseline "$1" --run "$2" --db "$3" >"$OUT/$4-check.txt" 2>&1
  echo "check exit $?"; tail -2 "$OUT/$4-check.txt"
  gpuvs compare "$1" "$2" --db "$3" --format json >"$OUT/$4-compare.json" 2>/dev/null
  gpuvs compare "$1" "$2" --db "$3" >"$OUT/$4-compare.txt" 2>&1
  tail -1 "$OUT/$4-compare.txt"
}
count() {
  python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$@" 2>/dev/null || echo 0
}

step_tests() {
  python3 -m pytest -m gpu -v -p no:cacheprovider >"$OUT/pytest-gpu.log" 2>&1
  grep -E "PASSED|FAILED|SKIPPED|ERROR" "$OUT/pytest-gpu.log" | sed 's/ *\[.*%\]//'; tail -1 "$OUT/pytest-gpu.log"
}
step_env() { gpuvs env; }
step_matmul() {
  gpuvs run -w matmul --budget "$BUDGET" --db "$DB" --json "$OUT/matmul.json" >"$OUT/matmul.txt" 2>&1
  grep -B1 -A12 "shape=seed000" "$OUT/matmul.txt"; tail -2 "$OUT/matmul.txt"
}
step_sweep() {
  gpuvs sweep matmul -s 64:4096:2 --refine --budget "$BUDGET" --db "$DB" \
    --json "$OUT/sweep-matmul.json" >"$OUT/sweep-matmul.txt" 2>&1
  grep -A12 "^crossover" "$OUT/sweep-matmul.txt"; grep -E "refining|finished" "$OUT/sweep-matmul.txt"
}
step_elementwise() {
  gpuvs sweep elementwise -s 1e3:1e9 --refine --budget "$BUDGET" --db "$DB" \
    --json "$OUT/elementwise.json" >"$OUT/elementwise.txt" 2>&1
  grep -A12 "^crossover" "$OUT/elementwise.txt"; grep -E "refining|finished" "$OUT/elementwise.txt"
}
step_kill() {
  local kdb="$OUT/kill.sqlite" pid n=0 run_id
  gpuvs run -w matmul -s 256:4096:2 --budget "$BUDGET" --db "$kdb" >"$OUT/killed.txt" 2>&1 &
  pid=$!
  for _ in $(seq 1 240); do
    n=$(count "$kdb" "select count(*) from measurements")
    [ "${n:-0}" -ge 12 ] && break
    sleep 0.5
  done
  kill -9 "$pid"; wait "$pid" 2>/dev/null  # workers see stdin close and exit on their own
  n=$(count "$kdb" "select count(*) from measurements")
  run_id=$(count "$kdb" "select run_id from runs")
  echo "killed run $run_id with SIGKILL after $n recorded cases"
  gpuvs run --resume "$run_id" --db "$kdb" >"$OUT/resumed.txt" 2>&1
  grep -E "already recorded|finished" "$OUT/resumed.txt"
  echo "cases now: $(count "$kdb" "select count(*) from measurements"); statuses: $(count "$kdb" "select group_concat(status || '=' || n) from (select status, count(*) n from measurements group by status)")"
}
step_energy() { python3 benchmarks/energy.py --out "$OUT"; }
step_observation() { python3 benchmarks/observation.py --out "$OUT"; }
step_quicktests() {
  python3 -m pytest -m gpu -p no:cacheprovider -q tests/test_observation_gpu.py \
    tests/test_peers_gpu.py tests/test_energy.py tests/test_memory.py tests/test_api.py \
    tests/predicting tests/test_worker.py tests/test_gpu_runner.py >"$OUT/pytest-gpu.log" 2>&1
  grep -E "FAILED|ERROR|passed|failed" "$OUT/pytest-gpu.log" | tail -15
}
step_seeds() {
  local t0=$SECONDS
  gpuvs seeds --db "$DB" --json "$OUT/seeds.json" >"$OUT/seeds.txt" 2>&1
  echo "seeds took $((SECONDS - t0)) s"; tail -3 "$OUT/seeds.txt"
  [ -n "${SEEDS_BASELINE:-}" ] || return 0
  echo "against $SEEDS_BASELINE:"; judged "$SEEDS_BASELINE" "$(run_of "$OUT/seeds.json")" "$DB" seeds
}
step_peers() { python3 benchmarks/peers.py --repeats 10 --out "$OUT" | tail -30; }
step_profile() {
  gpuvs ceilings --budget 0.3 --db "$DB" --save-profile "${PROFILE:-h100}" >"$OUT/ceilings.txt" 2>&1
  tail -4 "$OUT/ceilings.txt"
}
step_runall() {
  local t0=$SECONDS
  gpuvs run --all --budget 0.1 --passes 1 --yes --db "$DB" --json "$OUT/run-all.json" \
    >"$OUT/run-all.txt" 2>&1
  echo "run --all took $((SECONDS - t0)) s"; tail -2 "$OUT/run-all.txt"
}
step_seed3() {
  gpuvs seeds --seed 3 --energy --quick --db "$DB" >"$OUT/seed3-energy.txt" 2>&1
  grep -E -A1 "^energy|CPU energy|GPU energy|Keras step|GPU vs CPU, Keras|finished" "$OUT/seed3-energy.txt"
}

step_hallways() {
  python3 -m pytest -m gpu -p no:cacheprovider -q tests/test_gpu_runner.py \
    tests/test_observation_gpu.py tests/test_compare.py tests/test_run_file_worker.py \
    tests/test_ipython.py tests/test_pytest_plugin.py tests/test_memory.py tests/test_api.py \
    tests/predicting/test_predict_gpu.py >"$OUT/pytest-hallways.log" 2>&1
  grep -E "FAILED|ERROR|passed|failed" "$OUT/pytest-hallways.log" | tail -15
}
step_versions() {
  local v=docs/examples/versions.py
  gpuvs run-file "$v::loop" "$v::vectorised" "$v::compiled" --sizes 1e2:1e4 --budget 0.3 \
    --db "$DB" --json "$OUT/versions.json" >"$OUT/versions.txt" 2>&1
  tail -40 "$OUT/versions.txt"
}
step_default() {
  local t0=$SECONDS
  gpuvs run --db "$DB" --json "$OUT/default.json" >"$OUT/default.txt" 2>&1
  echo "the default run took $((SECONDS - t0)) s"; tail -3 "$OUT/default.txt"
}

step_calibration() {
  python3 -m pytest -m gpu -p no:cacheprovider -q tests/workloads/test_calibration_probes.py \
    >"$OUT/pytest-calibration.log" 2>&1
  grep -E "FAILED|ERROR|passed|failed" "$OUT/pytest-calibration.log" | tail -8
}
step_twice() {
  # The first-answer suite on NumPy and torch, twice back to back into one store, then
  # the gate and the comparison between them (issue 40's "the same machine, twice").
  local t0
  for r in a b; do
    t0=$SECONDS
    # shellcheck disable=SC2086  # TWICE is a list of arguments
    python3 ${PROFILED:+-m cProfile -o "$OUT/parent-$r.prof"} -m gpuvs run \
      ${TWICE--b numpy,torch --budget 0.3} --db "$OUT/twice.sqlite" \
      --json "$OUT/twice-$r.json" >"$OUT/twice-$r.txt" 2>&1
    echo "run $r took $((SECONDS - t0)) s"; tail -1 "$OUT/twice-$r.txt"
  done
  judged "$(run_of "$OUT/twice-a.json")" "$(run_of "$OUT/twice-b.json")" "$OUT/twice.sqlite" twice
}

for step in "${@:-tests env matmul sweep elementwise kill}"; do
  for s in $step; do echo "== $s"; "step_$s"; done
done
