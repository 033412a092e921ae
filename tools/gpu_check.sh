#!/usr/bin/env bash
# The whole check on a GPU machine, in one go: build everything, run the project's tests
# (GPU ones included), grade the reference solutions and the untouched exercises, run
# compute-sanitizer on broken variants and on the solutions, grade the plain student, sweep
# lessons 02 and 03 (the plain student against the reference) and plot them, and print a
# short summary last. In $OUT (or ./gpu-check): summary.txt, logs.tar.gz (every log, the
# lesson 02 sweep and all figures), and lesson 03's sweep CSV and PNG figures.
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
grade sanitize_race --tree grader/tests/broken/tiled_no_second_barrier --sanitize 03
grade sanitize_solutions --tree solutions --sanitize; sanitize_solutions_rc=$?
grade plain --tree grader/tests/students/plain

for example in build/test/example_*; do echo "== $example"; "$example"; done 2>&1 | tee "$logs/examples.log"

# The sweep students hand in: a plain student solution against the reference, all sizes.
./sweep 02 --tree grader/tests/students/plain --build-dir build/sweep --out "$logs/sweep" 2>&1 | tee "$logs/sweep.log"
sweep_rc=${PIPESTATUS[0]}
./sweep 03 --tree grader/tests/students/plain --build-dir build/sweep --out "$logs/sweep" 2>&1 | tee -a "$logs/sweep.log"
sweep03_rc=${PIPESTATUS[0]}
python3 ./plot "$logs"/sweep/*.csv --out "$logs/sweep/figures" 2>&1 | tee "$logs/plot.log"
# The device tool returns at most 8 files: lesson 03's here, lesson 02's in the logs.
cp "$logs/sweep/03_matmul.csv" "$logs"/sweep/figures/03_*.png "$out"/ 2>/dev/null

{
  echo "================ summary ================"
  head -2 "$logs/gpu.txt" | tail -1
  grep -E "tests passed|tests failed" "$logs/test.log"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|Not Run)\)" "$logs/test.log" || true
  echo "solutions: exit $solutions_rc, $(grep -E '^Total:' "$logs/grade_solutions.log")"
  grep -E "^ +performance +(passed|FAILED)" "$logs/grade_solutions.log" | sed 's/^ */  /'
  echo "exercises: exit $exercises_rc, $(grep -E '^Total:' "$logs/grade_exercises.log")"
  echo "plain student: $(grep -E '^Total:' "$logs/grade_plain.log")"
  grep -E "^ +performance +(passed|FAILED)" "$logs/grade_plain.log" | sed 's/^ */  /'
  echo "sanitize (tiled_no_second_barrier): $(grep -E 'racecheck found' "$logs/grade_sanitize_race.log" | head -1 | sed 's/^ *//')"
  echo "block_too_large: $(grep -E 'performance' "$logs/grade_block_too_large.log" | head -1 | sed 's/^ *//')"
  echo "sanitize (no_bounds_check): $(grep -E 'memcheck found' "$logs/grade_sanitize_broken.log" | head -1 | sed 's/^ *//')"
  echo "sanitize (solutions): exit $sanitize_solutions_rc, $(grep -E '^Total:' "$logs/grade_sanitize_solutions.log")"
  grep -E "^== |: " "$logs/examples.log" | grep -E "host clock|SMs|pinned|2048" | sed 's/^/  example: /'
  grep -E "x along|FP32:|TF32:" "$logs/examples.log" | sed 's/^/  example: /'
  echo "sweep: exit $sweep_rc (02), $sweep03_rc (03)"
  grep -E "best at|copies at| at N = " "$logs/sweep.log"
  echo "figures: $(ls "$logs"/sweep/figures 2>/dev/null | tr '\n' ' ')"
  echo "ctest exit: $test_rc"
} | tee "$out/summary.txt"
tar -czf "$out/logs.tar.gz" -C "$logs" .
