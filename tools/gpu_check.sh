#!/usr/bin/env bash
# The whole check on a GPU machine, in one go: build everything, run the project's tests
# (GPU ones included), grade the reference solutions and the untouched exercises, run
# compute-sanitizer on a broken variant and on the solutions, sweep lesson 02 (a plain
# student solution against the reference) and plot it, and print a short summary last.
# In $OUT (or ./gpu-check): summary.txt, logs.tar.gz, the sweep CSV and its PNG figures.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}
logs=$(mktemp -d)
mkdir -p "$out"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export PYTHONUNBUFFERED=1
seed=20261121

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$logs/gpu.txt"

cmake --workflow --preset test 2>&1 | tee "$logs/test.log"
test_rc=$?

grade() {  # grade LOGNAME ARGS...: ./grade on the test build, logged
  local name=$1
  shift
  ./grade --no-build --build-dir build/test --seed $seed --results "$logs/results_$name" "$@" 2>&1 | tee "$logs/grade_$name.log"
  return "${PIPESTATUS[0]}"
}
grade solutions --tree solutions; solutions_rc=$?
grade exercises; exercises_rc=$?
# A tree with a correct task 1 next to broken ones: its timing shows the reference ratio.
grade block_too_large --tree grader/tests/broken/block_too_large 01
grade sanitize_broken --tree grader/tests/broken/no_bounds_check --sanitize 01
grade sanitize_solutions --tree solutions --sanitize; sanitize_solutions_rc=$?

for example in build/test/example_*; do echo "== $example"; "$example"; done 2>&1 | tee "$logs/examples.log"

# The sweep students hand in: a plain student solution against the reference, all sizes.
./sweep 02 --tree grader/tests/students/plain --build-dir build/sweep --out "$logs/sweep" 2>&1 | tee "$logs/sweep.log"
sweep_rc=${PIPESTATUS[0]}
python3 ./plot "$logs/sweep/02_multiply_add.csv" --out "$logs/sweep/figures" 2>&1 | tee "$logs/plot.log"
cp "$logs/sweep/02_multiply_add.csv" "$logs"/sweep/figures/*.png "$out"/ 2>/dev/null

{
  echo "================ summary ================"
  head -2 "$logs/gpu.txt" | tail -1
  grep -E "tests passed|tests failed" "$logs/test.log"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|Not Run)\)" "$logs/test.log" || true
  echo "solutions: exit $solutions_rc, $(grep -E '^Total:' "$logs/grade_solutions.log")"
  grep -E "^ +performance +(passed|FAILED)" "$logs/grade_solutions.log" | sed 's/^ */  /'
  echo "exercises: exit $exercises_rc, $(grep -E '^Total:' "$logs/grade_exercises.log")"
  echo "block_too_large: $(grep -E 'performance' "$logs/grade_block_too_large.log" | head -1 | sed 's/^ *//')"
  echo "sanitize (no_bounds_check): $(grep -E 'memcheck found' "$logs/grade_sanitize_broken.log" | head -1 | sed 's/^ *//')"
  echo "sanitize (solutions): exit $sanitize_solutions_rc, $(grep -E '^Total:' "$logs/grade_sanitize_solutions.log")"
  grep -E "^== |: " "$logs/examples.log" | grep -E "host clock|SMs|pinned|2048" | sed 's/^/  example: /'
  echo "sweep: exit $sweep_rc"
  grep -E "best at|copies at" "$logs/sweep.log"
  echo "figures: $(ls "$logs"/sweep/figures 2>/dev/null | tr '\n' ' ')"
  echo "ctest exit: $test_rc"
} | tee "$out/summary.txt"
tar -czf "$out/logs.tar.gz" -C "$logs" .
