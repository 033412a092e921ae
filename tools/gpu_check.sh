#!/usr/bin/env bash
# The whole check on a GPU machine. With no stage named: build, suite, summary, which is
# `cmake --workflow --preset test` (every test, the gradings side by side in the GPU's slots,
# cmake/GpuTestSlots.cmake) with its logs kept and summarised. Stages:
#
#   tools/gpu_check.sh build            configure and build everything (the test preset)
#   tools/gpu_check.sh suite            every ctest test, as the test preset runs them (the solutions
#                                       under the sanitizer among them); its last lines say where
#                                       the time went (tools/ctest_summary.py)
#   tools/gpu_check.sh rest [LOG]       the tests a suite stage cut short by a time limit did not
#                                       finish (tools/ctest_rest.py, then ctest -R): those of LOG, a
#                                       suite.log brought from an earlier call (a machine starts
#                                       bare: put it in the tree, outside build/), else this
#                                       machine's build/gpu-check/suite.log
#   tools/gpu_check.sh tests            every ctest test but the end-to-end gradings
#   tools/gpu_check.sh e2e REGEX        the end-to-end gradings whose ctest name matches REGEX
#   tools/gpu_check.sh sanitize         ./grade --sanitize on the solutions and two broken variants
#   tools/gpu_check.sh cost             grades the solutions once; what the sanitizer check of a
#                                       pass costs each lesson (its wall time against the rest)
#   tools/gpu_check.sh ncu              Nsight Compute's counters (grader/driver/counters.py's
#                                       METRICS) on the timed tests of the solutions and of
#                                       slow broken variants: the CSVs for counters.py's tests and
#                                       the thresholds of issue 23, and what profiling costs
#   tools/gpu_check.sh stats N          lesson 07's statistical tests on the reference solution, N
#                                       times with seeds 1..N: how often a correct program fails
#                                       each (grader/README.md, "Statistical checks", expects none)
#   tools/gpu_check.sh first-grade      a fresh clone's ./grade 01, then ./grade of every lesson, each
#                                       timed (issue 25's first-grade goals: 20 s and 45 s on an H100)
#   tools/gpu_check.sh class N          a generated class of N students over every lesson, graded with
#                                       ./grade-class (check_class.py --size N; CLASS_PER_GPU=K gives
#                                       --per-gpu K, else ./grade-class chooses): every
#                                       verdict as expected, and class.json's time (phases, the GPU's
#                                       time alone, what the timing cache reused)
#   tools/gpu_check.sh durations        each test's seconds (Catch2's --durations) in the solutions'
#                                       programs: the timed tests (measuring their own yardsticks,
#                                       as the reference does), and the correctness tests of the
#                                       check of a pass under racecheck, at the sanitizer's sizes
#   tools/gpu_check.sh shared           a class's shared phases without the class (tools/shared_mix.py):
#                                       the solutions' correctness and sanitizer-check processes of
#                                       every lesson for 3 students, one at a time and 4 at once, and
#                                       each process's seconds and the test cases the sharing slowed
#                                       the most (--tests; about 3 minutes on an H100)
#   tools/gpu_check.sh summary          the short summary of everything run so far
#
# Stages can be combined in one call (tools/gpu_check.sh build tests summary). Logs collect in
# build/gpu-check/ across calls on the same machine; each stage's log and the summary are
# copied to $OUT (or ./gpu-check) when it ends. The summary lists ctest's counts, the
# scoreboards of the solutions, the exercises and the plain student (from the e2e logs), the
# performance ratios, and the hints each broken variant printed.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}
logs=build/gpu-check
mkdir -p "$out" "$logs"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export PYTHONUNBUFFERED=1
seed=20261122

stage_build() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$logs/gpu.txt"
  # GPU_CHECK_SLOTS: the gradings side by side (cmake/GpuTestSlots.cmake) instead of the count it picks.
  local status
  { cmake --preset test ${GPU_CHECK_SLOTS:+-DWORKBOOK_GPU_TEST_SLOTS=$GPU_CHECK_SLOTS} && cmake --build build/test; } \
    > "$logs/build.log" 2>&1
  status=$?
  grep -E "GPU gradings side by side" "$logs/build.log" | tee -a "$logs/stages.txt"
  echo "build: exit $status" | tee -a "$logs/stages.txt"
  grep -E "error|warning:" "$logs/build.log" | head -20
}

# The CPU's and the GPU's use while a stage runs (tools/utilization.py): whether it was short of
# CPU or of GPU. One sampler at a time; sampler_stop (or a stop by a time limit) summarises it.
sampler=""
sampler_start() {
  rm -f "$logs/util_$1.log"
  python3 tools/utilization.py record "$logs/util_$1.log" & sampler="$!:$logs/util_$1.log"
}
sampler_stop() {
  [ -n "$sampler" ] || return 0
  kill "${sampler%%:*}" 2>/dev/null && wait "${sampler%%:*}" 2>/dev/null
  python3 tools/utilization.py summary "${sampler#*:}" | tee -a "$logs/stages.txt"
  sampler=""
}

stage_suite() {
  # The test preset's own jobs and GPU slots; -V keeps each test's output (the summary reads it).
  # The per-GPU lock logs every hold: where the GPU's time went (tools/lock_log_summary.py).
  rm -f "$logs/locks.log"
  sampler_start suite
  # GPU_CHECK_JOBS: ctest's jobs instead of the preset's (with more slots than the preset's jobs allow).
  WORKBOOK_LOCK_LOG=$PWD/$logs/locks.log ctest --preset test ${GPU_CHECK_JOBS:+-j $GPU_CHECK_JOBS} -V \
    > "$logs/suite.log" 2>&1
  echo "suite: exit $?, $(grep -E '^[0-9]+% tests passed' "$logs/suite.log")" | tee -a "$logs/stages.txt"
  sampler_stop
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|Not Run)\)" "$logs/suite.log"
  grep -E "^ctest: " "$logs/suite.log" | tee -a "$logs/stages.txt"
  python3 tools/lock_log_summary.py "$logs/locks.log" | tee -a "$logs/stages.txt"
}

stage_rest() {
  local regex suite_log=$1
  if [ ! -f "$suite_log" ]; then
    echo "rest: no $suite_log: run the suite stage first, or name an earlier call's suite.log" |
      tee -a "$logs/stages.txt"
    return
  fi
  if ! regex=$(python3 tools/ctest_rest.py "$suite_log" build/test); then
    echo "rest: the suite finished every test" | tee -a "$logs/stages.txt"
    return
  fi
  WORKBOOK_LOCK_LOG=$PWD/$logs/locks_rest.log ctest --preset test -R "$regex" -V > "$logs/rest.log" 2>&1
  echo "rest: exit $?, $(grep -E '^[0-9]+% tests passed' "$logs/rest.log")" | tee -a "$logs/stages.txt"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|Not Run)\)" "$logs/rest.log"
}

stage_first_grade() {
  local fresh=/tmp/workbook-fresh-clone started
  rm -rf "$fresh"
  # The working tree as a fresh clone holds it: the files git would commit (tracked, and untracked
  # ones not ignored), no build folders. Not `git clone .`: on a device machine the copy's .git can
  # be older than its working tree (a clone there graded an older commit).
  mkdir -p "$fresh"
  if ! git ls-files -z --cached --others --exclude-standard > "$logs/first_grade_files" 2>/dev/null; then
    # No usable git here (no .git, or one git will not read): every file but the build folders.
    tar --exclude=./build --exclude=./.git --exclude=./gpu-check -cf - . | tar -xf - -C "$fresh" ||
      { echo "first-grade: could not copy the tree" | tee -a "$logs/stages.txt"; return; }
  else
    tar --null --ignore-failed-read -T "$logs/first_grade_files" -cf - 2>/dev/null | tar -xf - -C "$fresh" ||
      { echo "first-grade: could not copy the tree" | tee -a "$logs/stages.txt"; return; }
  fi
  local status
  for args in "01" ""; do
    started=$SECONDS
    # Each line stamped with the seconds since ./grade started: where the first grade's time goes
    # (configure, build, correctness, the copy bandwidth, the timed tasks).
    # shellcheck disable=SC2086  # "" is ./grade with no lesson: every lesson
    (cd "$fresh" && ./grade $args) 2>&1 | python3 -u -c '
import sys, time
start = time.monotonic()
for line in sys.stdin:
    sys.stdout.write("%6.1f %s" % (time.monotonic() - start, line))' > "$logs/first_grade_${args:-all}.log"
    status=${PIPESTATUS[0]}
    echo "first-grade: ./grade ${args:-(every lesson)} exit $status, $((SECONDS - started)) s, $(grep -oE 'Total:.*' "$logs/first_grade_${args:-all}.log")" |
      tee -a "$logs/stages.txt"
  done
}

stage_class() {
  local size=$1 started class=build/gpu-check-class
  started=$SECONDS
  rm -rf "$class" "$logs/locks_class_$size.log"  # check_class.py --keep resumes a class it finds there
  sampler_start "class_$size"
  WORKBOOK_LOCK_LOG=$PWD/$logs/locks_class_$size.log \
    python3 grader/tests/check_class.py --size "$size" --lessons 01 02 03 04 05 06 07 ${CLASS_PER_GPU:+--per-gpu "$CLASS_PER_GPU"} \
    --build-dir build/class-check --keep "$class" > "$logs/class_$size.log" 2>&1
  echo "class $size (--per-gpu ${CLASS_PER_GPU:-chosen by ./grade-class}): exit $?, $((SECONDS - started)) s, $(tail -1 "$logs/class_$size.log")" | tee -a "$logs/stages.txt"
  grep -m1 -E "^Grading [0-9]+ submissions" "$logs/class_$size.log" | tee -a "$logs/stages.txt"
  sampler_stop
  python3 tools/lock_log_summary.py "$logs/locks_class_$size.log" | tee -a "$logs/stages.txt"
  cp "$class/grades/class.json" "$logs/class_$size.json" 2>/dev/null
  # Each submission's feedback (its scoreboard, results.json with its phases' seconds), for a
  # look at where one grading's time went beyond class.json's totals.
  tar -czf "$logs/class_${size}_feedback.tar.gz" -C "$class/grades" feedback 2>/dev/null
  # Where the class's time went (class.json's "time", grader/README.md).
  python3 - "$class/grades/class.json" <<'PY' | tee -a "$logs/stages.txt"
import json, sys
try:
    time = json.load(open(sys.argv[1])).get("time", {})
except (OSError, ValueError) as e:
    sys.exit(f"  no class.json to read: {e}")
print(f"  gradings {time.get('gradings')}, grading wall {time.get('grading_wall_s')} s, median {time.get('grading_s_median')} s")
for key in ("phases_s", "phase_details_s", "gpu_lock_s", "timing_cache"):
    print(f"  {key}: {time.get(key)}")
print("  longest: " + ", ".join(f"{p['submission']} {p['lesson'][:2]} {p['phase']} {p['s']} s"
                                for p in time.get("longest_s") or []))
# Issue 25's goal: 100 submissions of every lesson in 30 minutes on one GPU. At this class's rate,
# and the floor its time alone on the GPU sets (each submission's holds alone, one after another).
n, wall = time.get("gradings") or 0, time.get("grading_wall_s") or 0
alone = (time.get("gpu_lock_s") or {}).get("exclusive_held") or 0
if n:
    print(f"  per submission: {wall / n:.1f} s of wall time, {alone / n:.1f} s alone on the GPU; 100 submissions: "
          f"about {wall / n * 100 / 60:.0f} min at this rate, at least {alone / n * 100 / 60:.0f} min alone")
if time.get("steady_s_per_submission"):
    projected = time.get("projected_s_for_100")
    print(f"  steady pace: {time['steady_s_per_submission']} s a submission (build {time.get('build_s')} s)"
          + (f"; 100 submissions projected at {projected / 60:.1f} min" if projected else ""))
PY
}

stage_tests() {
  ctest --test-dir build/test -E "grader\.e2e" -j 4 --output-on-failure > "$logs/tests.log" 2>&1
  echo "tests: exit $?, $(grep -E '^[0-9]+% tests passed' "$logs/tests.log")" | tee -a "$logs/stages.txt"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|Not Run)\)" "$logs/tests.log"
}

stage_e2e() {
  local regex=$1 name
  name=e2e_$(echo "$regex" | tr -c 'a-zA-Z0-9' '_' | cut -c1-40)
  # Side by side: ./grade's per-GPU lock times every timed phase alone (grader/README.md).
  ctest --test-dir build/test -R "grader\.e2e\.($regex)" -j "${E2E_JOBS:-6}" --output-on-failure -V > "$logs/$name.log" 2>&1
  echo "$name: exit $?, $(grep -E '^[0-9]+% tests passed' "$logs/$name.log")" | tee -a "$logs/stages.txt"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|Not Run)\)" "$logs/$name.log"
}

stage_sanitize() {
  # A broken variant is graded as the build laid it out (grader/tests/CMakeLists.txt, tools/variants.py).
  for tree in solutions build/test/grader/tests/broken/no_bounds_check; do
    ./grade --no-build --build-dir build/test --seed $seed --sanitize --results "$logs/sanitize_${tree//\//_}" \
      --tree "$tree" 01 03 04 05 > "$logs/sanitize_${tree//\//_}.log" 2>&1
    echo "sanitize $tree: exit $?, $(grep -E '^Total:' "$logs/sanitize_${tree//\//_}.log")" | tee -a "$logs/stages.txt"
  done
}

stage_cost() {
  ./grade --no-build --build-dir build/test --seed $seed --results "$logs/cost" --tree solutions \
    > "$logs/cost.log" 2>&1
  echo "cost: exit $?, $(grep -E '^Total:' "$logs/cost.log")" | tee -a "$logs/stages.txt"
  python3 - "$logs/cost/results.json" <<'PY' | tee -a "$logs/stages.txt"
import json, sys
walls = json.load(open(sys.argv[1]))["extra_data"]["wall_s"]
for slug, w in sorted(walls.items()):
    check, total = w.get("sanitizer_check", 0.0), w.get("total", 0.0)
    without = total - check
    print(f"  sanitizer check {slug}: {check:.1f} s of {total:.1f} s, x{total / without:.2f} the grading without it"
          if without > 0 else f"  sanitizer check {slug}: {w}")
PY
}

stage_durations() {
  local program lesson sanitizer started
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # racecheck's command line as the check of a pass has it (grader/driver/sanitizer.py), one word a line.
  local -a check
  mapfile -t check < <(cd grader && python3 -c 'import sys; from driver import sanitizer
print("\n".join(sanitizer.command(sys.argv[1], "racecheck", check=True)))' "$sanitizer")
  for program in build/test/grade_0*__solutions; do
    lesson=${program#build/test/grade_}; lesson=${lesson%__solutions}
    started=$(date +%s.%N)
    { echo "== $lesson [perf]"; "$program" "[perf]" --durations yes -r compact 2>&1
      awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s wall\n", b - a }'; } >> "$logs/durations.log"
    started=$(date +%s.%N)
    { echo "== $lesson ~[perf] racecheck"
      WORKBOOK_SANITIZE=racecheck "${check[@]}" "$program" "~[perf]" --durations yes -r compact 2>&1
      awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s wall\n", b - a }'; } >> "$logs/durations.log"
  done
  # The tests over a tenth of a second, and each program's wall time.
  grep -E "^== |^[0-9]+\.[0-9]+ s: |s wall" "$logs/durations.log" |
    awk '/^[0-9]+\.[0-9]+ s: / && $1 < 0.1 { next } { print }' | cut -c1-150 | tee -a "$logs/stages.txt"
}

stage_shared() {
  python3 tools/shared_mix.py build/test --students 3 --at-once 1 4 --tests > "$logs/shared.log" 2>&1
  echo "shared: exit $?" | tee -a "$logs/stages.txt"
  sed 's/^/  /' "$logs/shared.log" | tee -a "$logs/stages.txt"
}

stage_ncu() {
  local metrics ncu program test name started tries unknown
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  metrics=$(cd grader && python3 -c "from driver import counters; print(','.join(counters.METRICS))")
  # program (in build/test) and its timed test, separated by a tab. As counters.command() runs it:
  # WORKBOOK_PROFILE=1 makes the timed test run the student's call that counts once more inside
  # cudaProfilerStart/Stop (workbook::run_profiled), the only range ncu profiles. A metric this ncu
  # does not know is dropped, and named in the stage's line, so that the rest are still read.
  while IFS=$'\t' read -r program test; do
    [ -n "$program" ] || continue
    name=${program##*/}
    started=$SECONDS
    for tries in 1 2 3 4 5 6 7 8; do
      WORKBOOK_PROFILE=1 "$ncu" --csv --print-units base --profile-from-start off --launch-count 4 \
        --metrics "$metrics" \
        "build/test/$program" "$test" > "$logs/ncu_$name.csv" 2> "$logs/ncu_$name.err"
      unknown=$(grep -oE "Failed to find metric [^ ]+" "$logs/ncu_$name.csv" "$logs/ncu_$name.err" | head -1 | awk '{print $NF}')
      [ -n "$unknown" ] || break
      echo "ncu: unknown metric $unknown, dropped" | tee -a "$logs/stages.txt"
      metrics=$(echo ",$metrics," | sed "s/,$unknown,/,/; s/^,//; s/,$//")
    done
    echo "ncu $name: $((SECONDS - started)) s, $(grep -c '^"' "$logs/ncu_$name.csv") CSV lines" |
      tee -a "$logs/stages.txt"
  done <<LIST
grade_01_vector_add__solutions	[task_1][perf]
grader/tests/grade_01_vector_add__broken_vector_add_uncoalesced	[task_1][perf]
grade_03_matmul__solutions	[task_2][perf]
grade_03_matmul__solutions	[task_4][perf]
grader/tests/grade_03_matmul__broken_tiled_without_tiles	[task_2][perf]
grader/tests/grade_03_matmul__broken_tiled_bank_conflicts	[task_2][perf]
grade_04_reduction__solutions	[task_2][perf]
grader/tests/grade_04_reduction__students_plain	[task_2][perf]
grader/tests/grade_04_reduction__broken_sum_one_thread_per_block	[task_2][perf]
grader/tests/grade_04_reduction__broken_sum_few_blocks	[task_2][perf]
grader/tests/grade_04_reduction__broken_sum_via_doubles	[task_2][perf]
grade_02_multiply_add__solutions	[task_1][perf]
LIST
  echo "$metrics" > "$logs/ncu_metrics.txt"
}

stage_summary() {
  {
    echo "================ summary ================"
    cat "$logs/gpu.txt" 2>/dev/null
    cat "$logs/stages.txt" 2>/dev/null
    # The scoreboards of the reference, the untouched exercises and the plain student, as the
    # e2e tests graded them (ctest -V keeps each test's output).
    for test in solutions_score_full_marks untouched_exercises_score_zero students_plain_scores_full_marks; do
      for file in "$logs"/e2e_*.log "$logs"/suite.log; do
        [ -f "$file" ] || continue
        n=$(grep -oE "Start +[0-9]+: grader\.e2e\.$test\b" "$file" | grep -oE "[0-9]+" | head -1)
        [ -n "$n" ] || continue
        grep -E "^$n: (Total:|.*performance +(passed|FAILED))" "$file" | sed "s/^$n: /  $test: /" | head -20
      done
    done
    echo "hints printed by the broken variants:"
    # ctest -V prefixes each line of a test's output with its number ("158: ..."), and side by side
    # the tests' lines interleave: pair each hint with its test by that number.
    cat "$logs"/e2e_*.log "$logs"/suite.log 2>/dev/null |
      awk 'match($0, /Start +[0-9]+: grader\.e2e\.broken_[a-z_0-9]+_is_caught/) {
             split(substr($0, RSTART, RLENGTH), f, /: /); sub(/Start +/, "", f[1])
             name = f[2]; sub(/grader\.e2e\.broken_/, "", name); sub(/_is_caught/, "", name); test[f[1]] = name; next }
           match($0, /^[0-9]+: .*Hint \[[a-z0-9-]+\]/) {
             n = $0; sub(/:.*/, "", n); id = $0; sub(/.*Hint \[/, "", id); sub(/\].*/, "", id)
             if (n in test && index(h[n], "[" id "]") == 0) h[n] = h[n] " [" id "]" }
           END { for (n in h) print "  " test[n] ":" h[n] }' | sort
  } | tee "$out/summary.txt"
}

stage_stats() {
  local runs=$1 program=build/test/grade_07_monte_carlo__solutions seed failed=0
  # The tests whose verdicts are statistical (each at alpha = 1e-6), by name; timed tests left out.
  local spec='Task 1: count_inside_circle counts*,Task 3: thermal_velocities draws*,Task 4: the walkers spread*'
  : > "$logs/stats.log"
  for seed in $(seq 1 "$runs"); do
    if ! "$program" "$spec" --rng-seed "$seed" -r compact >> "$logs/stats.log" 2>&1; then
      failed=$((failed + 1))
      echo "seed $seed: FAILED" >> "$logs/stats.log"
    fi
  done
  echo "stats: the reference's statistical tests failed in $failed of $runs runs (seeds 1..$runs)" | tee -a "$logs/stages.txt"
  grep -E "^seed [0-9]+: FAILED" "$logs/stats.log" | head -5
}

# Stopped by a time limit (timeout sends TERM) or Ctrl-C: the lock log's summary so far and every
# log still reach $OUT.
stopped() {
  sampler_stop
  [ -f "$logs/locks.log" ] && python3 tools/lock_log_summary.py "$logs/locks.log" | sed 's/^/stopped: /' |
    tee -a "$logs/stages.txt"
  tar -czf "$out/logs.tar.gz" -C "$logs" .
  exit 124
}
trap stopped TERM INT

[ $# -gt 0 ] || set -- build suite summary
while [ $# -gt 0 ]; do
  stage=$1
  shift
  case $stage in
    build) stage_build ;;
    suite) stage_suite ;;
    tests) stage_tests ;;
    e2e) stage_e2e "${1:-.}"; shift ;;
    sanitize) stage_sanitize ;;
    cost) stage_cost ;;
    ncu) stage_ncu ;;
    durations) stage_durations ;;
    shared) stage_shared ;;
    stats) stage_stats "${1:-100}"; shift ;;
    first-grade) stage_first_grade ;;
    class) stage_class "${1:-16}"; shift ;;
    rest) if [ -f "${1:-}" ]; then stage_rest "$1"; shift; else stage_rest "$logs/suite.log"; fi ;;
    summary) stage_summary ;;
    *) echo "gpu_check.sh: unknown stage '$stage' (build, suite, rest, tests, e2e REGEX, sanitize, cost, ncu, durations, shared, stats N, first-grade, class N, summary)" >&2
       exit 2 ;;
  esac
done
# The device tool returns at most 8 files: every log in one archive.
tar -czf "$out/logs.tar.gz" -C "$logs" .
