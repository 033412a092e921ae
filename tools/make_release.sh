#!/usr/bin/env bash
# Makes the student release: the repository at HEAD without the reference solutions and
# without the grader's broken variants and sample students (they contain correct kernels).
#   tools/make_release.sh [OUTPUT.tar.gz]      (default: cuda-workbook-student.tar.gz)
# The build, ./grade and the project's tests all work in the release: grading simply shows
# no reference ratio, and the tests that need solutions/ are not registered.
set -euo pipefail
cd "$(dirname "$0")/.."
output=${1:-cuda-workbook-student.tar.gz}
git diff --quiet HEAD -- || echo "note: uncommitted changes are not in the release (it is made from HEAD)" >&2
git archive --format=tar.gz --prefix=cuda-workbook/ -o "$output" HEAD -- . ':!solutions' ':!grader/tests/broken' ':!grader/tests/students' \
  ':!grader/tests/expected/solutions.json' ':!tools/gpu_check.sh'
if tar -tzf "$output" | grep -qE '^cuda-workbook/(solutions/|grader/tests/broken/|grader/tests/students/)'; then
  echo "make_release: the release still contains solutions; not shipping $output" >&2
  rm -f "$output"
  exit 1
fi
echo "wrote $output ($(tar -tzf "$output" | wc -l) entries, no solutions/)"
