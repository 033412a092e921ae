#!/usr/bin/env bash
# The whole check on a GPU machine, in one go: build everything, run the project's tests
# (GPU ones included), grade the reference solutions and the untouched exercises, run one
# broken variant under compute-sanitizer, and print a short summary last.
# Logs go to $OUT (or ./gpu-check) so they survive the machine.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}
mkdir -p "$out"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"

cmake --workflow --preset test 2>&1 | tee "$out/test.log"
test_rc=$?

./grade --no-build --build-dir build/test --tree solutions --seed 20261121 --results "$out/solutions" \
  2>&1 | tee "$out/grade_solutions.log"
solutions_rc=$?
./grade --no-build --build-dir build/test --seed 20261121 --results "$out/exercises" \
  2>&1 | tee "$out/grade_exercises.log"
exercises_rc=$?
# A tree with a correct task 1 next to broken ones: its timing shows the reference ratio.
./grade --no-build --build-dir build/test --tree grader/tests/broken/block_too_large --seed 20261121 \
  --results "$out/block_too_large" 2>&1 | tee "$out/grade_block_too_large.log"
./grade --no-build --build-dir build/test --tree grader/tests/broken/no_bounds_check --sanitize 01 \
  --results "$out/sanitize" 2>&1 | tee "$out/grade_sanitize.log"

for example in build/test/example_*; do echo "== $example"; "$example"; done 2>&1 | tee "$out/examples.log"

echo
echo "================ summary ================"
head -2 "$out/gpu.txt" | tail -1
grep -E "tests passed|tests failed" "$out/test.log"
grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|Not Run)\)" "$out/test.log" || true
echo "solutions: exit $solutions_rc, $(grep -E '^Total:' "$out/grade_solutions.log")"
grep -E "^ +performance +(passed|FAILED)" "$out/grade_solutions.log" | sed 's/^ */  /'
echo "exercises: exit $exercises_rc, $(grep -E '^Total:' "$out/grade_exercises.log")"
echo "block_too_large: $(grep -E 'performance' "$out/grade_block_too_large.log" | head -1 | sed 's/^ *//')"
echo "sanitize (no_bounds_check): $(grep -E 'memcheck found' "$out/grade_sanitize.log" | head -1 | sed 's/^ *//')"
echo "ctest exit: $test_rc"
