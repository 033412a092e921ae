#!/usr/bin/env python3
"""Start a new lesson: every file a lesson has, in every tree, with a placeholder task that builds and
grades from the first minute.

    tools/new_lesson.py NN_name "Title"

writes, for lesson NN_name (NN after the last lesson's number):

  lessons/manifest.json                  the lesson's entry, appended (the rest of the file unchanged):
                                         title, sources, time limit, sanitizers, one task with
                                         correctness points and three hints marked "(to write: ...)"
  lessons/NN_name/README.md              the outline: what you will learn, a worked example quoted from
                                         the example file, "Task 1", "When the grader says no"
  lessons/NN_name/name.hpp               the interface, its contract stated in a Doxygen comment
  lessons/NN_name/examples/name.cu       a worked example that compiles and runs (not the task's answer)
  exercises/NN_name/name.cu              the skeleton: TODO(task 1), compiles, "not implemented yet"
  solutions/NN_name/name.cu              a reference that passes the grader
  grader/NN_name/name_test.cu            the grader's tests: a "wrote nothing" probe, correctness at every
                                         size, the timed test, the contract at every size
                                         (grader/support/contract.hpp)
  grader/NN_name/benchmark.hpp           what the lesson times, declared once: the bytes an element
                                         moves, the timed size and how it is timed; the timed test
                                         reads it, and so would the lesson's sweep
  grader/tests/students/plain/NN_name/name.cu   a plain student's solution, which must earn every point
  grader/tests/expected/exercises.json, solutions.json, students/plain/expected.json   their verdicts

then runs the project's generators: grader/skeletons.json (python3 -m grader.driver.skeleton --write),
README.md's lesson table (tools/lesson_index.py), the code quoted in lessons (tools/snippets.py) and
the hint lists (tools/hint_catalogue.py, after registering the lesson's task in grader/hints.json for
the hints the shared contract checker can print: default-stream, device-synchronize, synchronous-copy).

The task is a placeholder, so that the whole pipeline works at once: scale(in, out, n, a, stream),
out[i] = a * in[i] on device arrays, on the stream it is given, returning without waiting. Replace it,
in every file above, with the lesson's own task; every text still to write says "(to write: ...)".

The placeholder task is timed: its [task_1][perf] test measures scale at benchmark.hpp's size with
workbook::measure, the timing routine the grader and ./sweep share, and records the bandwidth as a
fraction of the copy bandwidth, the manifest's "performance" metric (threshold 0.5, a placeholder: on
an H200 the plain student's scale, one element a thread, reached 0.64 and the template's reference
0.72; the H100 gives more, November 2026). It declares no
sweep: a lesson that gets one adds tools/bench/NN_name.cu, which includes the same benchmark.hpp, and
its manifest entry's "sweep" (its kind and the figures ./plot draws; README.md, "Adding a lesson").

Exit status: 0 written; 1 a generator failed (the files written so far are left for you to see);
2 refused (a bad slug or title, a lesson that exists, a number not after the last lesson's)."""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
# Two digits, an underscore, a lower-case name that starts with a letter (the name becomes file names
# and the lesson's selector: ./grade scaffold_check). The manifest's own rule is looser (driver/manifest.py).
SLUG = re.compile(r"^(\d{2})_([a-z][a-z0-9_]*)$")
TASK_FUNCTION = "scale"  # the placeholder task
# The hints grader/support/contract.cpp prints for a contract like the placeholder's (streams given,
# never waits): grader/hints.json lists, for each, every task whose contract can print it.
CONTRACT_HINTS = ("device-synchronize", "default-stream", "synchronous-copy")
EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2


class Refused(Exception):
    """The lesson cannot be added as asked: exit status 2, nothing written."""


# ---------------------------------------------------------------------------------------------
# The files. @SLUG@ 06_scaffold_check, @NUMBER@ 06, @NAME@ scaffold_check, @TITLE@ the title.

HEADER = """\
/// \\file
/// Lesson @NUMBER@'s interface: the function you write in
/// exercises/@SLUG@/@NAME@.cu.
/// The grader calls exactly this, so keep its name and parameters as they are.
///
/// (to write: the lesson's interface. tools/new_lesson.py wrote a placeholder task, scale, so that
/// the lesson builds and grades from the start; replace it here, in the exercise, the solution, the
/// grader's tests and the plain student together.)
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

/// Task 1 (placeholder): out[i] = a * in[i] for 0 <= i < n, where \\p in and \\p out are device
/// arrays of n floats that do not overlap; n may be 0. Everything on \\p stream, nothing on the
/// default stream; returns without waiting for the GPU (the caller waits when it needs \\p out);
/// copies nothing to or from the host and leaves nothing allocated.
void scale(const float* in, float* out, std::size_t n, float a, cudaStream_t stream);
"""

EXAMPLE = """\
// Worked example for lesson @NUMBER@: @TITLE@.
// Written by tools/new_lesson.py as a placeholder. (to write: what this example shows, and what it
// deliberately leaves to the task.)
//
// It fills a device array with its own indices on a stream of its own, copies it back and checks
// it: a kernel queued on a stream, with a grid-stride loop over std::size_t indices. It is not the
// task's answer: the task reads an input, and returns without waiting. Lesson @NUMBER@'s README
// quotes it between the //! [name] markers; ctest runs it (exit 0, or 77 without a GPU).
#include "workbook/workbook.hpp"

#include <cstddef>
#include <cstdio>
#include <vector>

//! [kernel]
// out[i] = i for every i < n, for any grid: each thread steps by the number of threads in the grid.
__global__ void fill_with_index(float* out, std::size_t n) {
  const std::size_t stride = std::size_t{blockDim.x} * gridDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = static_cast<float>(i);
  }
}
//! [kernel]

int main() {
  if (workbook::cuda_device_count() == 0) return workbook::exit_without_gpu("fill_with_index");

  const std::size_t n = 1'000'003;  // not a multiple of the grid's threads
  workbook::Stream stream(cudaStreamNonBlocking);
  workbook::DeviceBuffer<float> d_out(n);
  //! [launch]
  fill_with_index<<<64, 256, 0, stream.get()>>>(d_out.data(), n);  // queued on the stream: returns at once
  WORKBOOK_CHECK_LAUNCH();                                          // was the launch itself valid?
  //! [launch]

  std::vector<float> out(n);
  WORKBOOK_CUDA_CHECK(cudaMemcpyAsync(out.data(), d_out.data(), d_out.bytes(), cudaMemcpyDeviceToHost,
                                      stream.get()));
  stream.synchronize();  // the host waits once, when it needs the values

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += out[i] != static_cast<float>(i);
  std::printf("fill_with_index: %zu wrong elements of %zu\\n", wrong, n);
  return wrong == 0 ? 0 : 1;
}
"""

README = """\
# Lesson @NUMBER@: @TITLE@

> This outline was written by `tools/new_lesson.py`. Replace every "(to write: ...)", and the
> placeholder task `scale` in every tree (README.md, "Adding a lesson", lists the files).

(to write: what the students already know from NumPy, Numba and CuPy, and what this lesson adds.)

You will write one function in `exercises/@SLUG@/@NAME@.cu`, declared in
`lessons/@SLUG@/@NAME@.hpp`. Grade it with

```sh
./grade @NUMBER@
```

## What you will learn

- (to write: the lesson's first idea, in one line)
- (to write: the second)
- (to write: what the task practises, and how the grader checks it)

## Worked example: a kernel on a stream of its own

(to write: what the example shows, and why.) The code below is compiled and run by the build, from
`lessons/@SLUG@/examples/@NAME@.cu`: a kernel whose threads step through the whole array whatever
the grid,

<!-- snippet: lessons/@SLUG@/examples/@NAME@.cu kernel -->
```cpp
```

queued on a stream of its own, without the host waiting for it:

<!-- snippet: lessons/@SLUG@/examples/@NAME@.cu launch -->
```cpp
```

## Task 1: `scale` (placeholder)

(to write: the task.) The placeholder: `scale(in, out, n, a, stream)` writes `out[i] = a * in[i]`
for the device arrays `in` and `out`, on `stream`, and returns without waiting for the GPU, as
`lessons/@SLUG@/@NAME@.hpp` states. The grader checks every element at sizes 1, 31, 32, 33, 255,
256, 257, 1000, a prime, random sizes and about 67 million, with guards around `out`, and `n = 0`;
then it holds every call to the header's contract: work on the given stream only, no wait for the
GPU, no copy to or from the host, nothing left allocated.

## When the grader says no

- **"not implemented yet"**: the function is still the skeleton (its `TODO(task 1)` and body
  unchanged). Fill it in. Once you have changed it, a function that still writes nothing is a
  failure, and the grader says what it saw on the GPU.
- **"broke its contract"**: the call did something its header rules out; the verdict names the
  clause and shows what the grader's tracer saw. (to write: the lesson's own mistakes.)

<!-- hints: generated from grader/hints.json by tools/hint_catalogue.py -->
<!-- hints: end -->

Each verdict shows the sizes and the seed; `./grade --seed N @NUMBER@` repeats the same inputs.
"""

EXERCISE = """\
// Lesson @NUMBER@: @TITLE@.
// Read lessons/@SLUG@/README.md first.
//
// Fill in the TODO; it is task 1 of the lesson. Grade your work with
//     ./grade @NUMBER@
// Untouched, this file compiles and the task is graded "not implemented yet".
#include "@NAME@.hpp"

#include "workbook/workbook.hpp"

void scale(const float* in, float* out, std::size_t n, float a, cudaStream_t stream) {
  // TODO(task 1): out[i] = a * in[i] for every i < n, computed on the GPU; in and out are device
  // arrays. n runs from 1 to about 67 million, mostly not a multiple of any block size, and may be 0:
  // every element written, nothing outside out touched. All work on the given stream, never the
  // default stream; return without waiting for the GPU; nothing copied to or from the host, nothing
  // left allocated. Lesson sections: "Worked example: a kernel on a stream of its own", "Task 1".
  (void)in, (void)out, (void)n, (void)a, (void)stream;
}
"""

SOLUTION = """\
// Lesson @NUMBER@: @TITLE@. Reference solution.
//
// (to write: the reference and why it is built this way.) The placeholder task's reference, written
// by tools/new_lesson.py: a grid-stride loop over std::size_t indices on a grid of at most 4096
// blocks, launched on the stream given, with no wait.
#include "@NAME@.hpp"

#include "workbook/workbook.hpp"

#include <algorithm>

namespace {

__global__ void scale_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n, float a) {
  const std::size_t stride = std::size_t{blockDim.x} * gridDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a * in[i];
  }
}

}  // namespace

void scale(const float* in, float* out, std::size_t n, float a, cudaStream_t stream) {
  if (n == 0) return;  // a launch of 0 blocks is an invalid configuration
  const int block = 256;
  const int grid = static_cast<int>(std::min<std::size_t>((n + block - 1) / block, 4096));
  scale_kernel<<<grid, block, 0, stream>>>(in, out, n, a);
  WORKBOOK_CHECK_LAUNCH();
}
"""

PLAIN_STUDENT = """\
// A plain, honest lesson @NUMBER@ as a student would write it after reading the lesson: one element
// per thread with a bounds check, enough blocks to cover n, launched on the stream given. It must
// earn every point. (Written by tools/new_lesson.py for the placeholder task; to write: the lesson's own.)
#include "@NAME@.hpp"

#include "workbook/workbook.hpp"

__global__ void scale_kernel(const float* in, float* out, std::size_t n, float a) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * in[i];
}

void scale(const float* in, float* out, std::size_t n, float a, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned block = 256;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  scale_kernel<<<grid, block, 0, stream>>>(in, out, n, a);
  WORKBOOK_CHECK_LAUNCH();
}
"""

GRADER_TEST = """\
// Grader tests for lesson @NUMBER@: @TITLE@.
//
// (to write: the lesson's tests.) Written by tools/new_lesson.py for the placeholder task, scale:
// - a "wrote nothing" probe: one traced call on 1000 floats; a call that ran nothing on the GPU and
//   left out as the grader filled it ends the test as "wrote nothing", which the driver calls "not
//   implemented yet" only while the task's code is still the skeleton;
// - correctness at every size of grader::test_sizes (1, around a warp and a block, 1000, a prime,
//   two seeded random sizes and, outside the sanitizer, about 2^26), with out poisoned and guarded
//   on both sides and compared element by element: a float product is one correctly rounded IEEE
//   multiplication on host and device, so the results must match bit for bit; and n = 0;
// - the contract @NAME@.hpp states, held at every size by the shared checker of
//   grader/support/contract.hpp (grader::given_stream_contract: the stream given only, no wait, no
//   copy to or from the host, nothing left behind), after one untraced call
//   (grader::require_contract_kept). It runs after the correctness test, whose verdicts say more
//   where they apply.
// - the timed test ([task_1][perf]): lesson @NUMBER@'s benchmark (benchmark.hpp) at its size, checked
//   before it is timed, its figure of merit the bandwidth over the copy bandwidth measured in the same
//   run (the manifest's "performance" metric).
#include "@NAME@.hpp"

#include "benchmark.hpp"
#include "contract.hpp"
#include "diagnosis.hpp"
#include "grader.hpp"
#include "output_matcher.hpp"
#include "tracer.hpp"

#include "workbook/workbook.hpp"

#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

namespace {

constexpr workbook::Tolerance kExact{0.0, 0.0};
constexpr std::size_t kLarge = (std::size_t{1} << 26) + 7;  // 256 MiB per array, not a block multiple
constexpr float kFactor = -1.75f;                            // a, in every call

// The stream every call is given: non-blocking, so work that strays to the default stream is not
// ordered with it.
cudaStream_t student_stream() {
  static workbook::Stream stream(cudaStreamNonBlocking);
  return stream.get();
}

// in on the device (uniform in [-1, 1], guarded), out (poisoned, guarded) and the expected out,
// computed on the host from the same seeded stream the device filled in from.
struct Problem {
  explicit Problem(std::size_t n) : in(n, workbook::kInputGuardBits), out(n), expected(n) {
    const std::uint64_t seed = grader::seed_for("in " + std::to_string(n));
    in.fill_random(seed);
    for (std::size_t i = 0; i < n; ++i) expected[i] = kFactor * workbook::random_uniform(seed, i, -1, 1);
  }
  workbook::GuardedDeviceArray in, out;
  std::vector<float> expected;
};

std::string call_text(std::size_t n) { return "scale(in, out, " + std::to_string(n) + ", -1.75, stream)"; }

std::size_t large_size() { return workbook::fit_in_free_memory(kLarge, 2); }

}  // namespace

TEST_CASE("Task 1: scale is right for every size", "[task_1]") {
  grader::require_gpu();
  {
    Problem p(1000);
    const auto trace = grader::trace([&] {
      scale(p.in.data(), p.out.data(), 1000, kFactor, student_stream());
      grader::synchronize(call_text(1000));  // inside: a call that never ends is reported as such
    });
    const auto out = grader::read_back(p.out);
    const auto comparison = workbook::compare_to_reference(out.values.data(), p.expected.data(), 1000, kExact);
    const bool gpu_work = trace && (!trace->kernels.empty() || !trace->copies.empty() || !trace->memsets.empty());
    if (grader::nothing_written(comparison, out.guards) && !gpu_work) {
      grader::wrote_nothing(call_text(1000) + " returned and wrote nothing: " + grader::untouched_output("out", 1000) +
                                "; it ran nothing on the GPU",
                            trace);
    }
  }
  for (const std::size_t n : grader::test_sizes(256, large_size())) {
    CAPTURE(n);
    Problem p(n);
    scale(p.in.data(), p.out.data(), n, kFactor, student_stream());
    grader::synchronize(call_text(n));
    REQUIRE_THAT(grader::read_back(p.out), grader::MatchesReference(p.expected, kExact));
  }
  {
    Problem p(1);  // n = 0: valid, and nothing to write
    scale(p.in.data(), p.out.data(), 0, kFactor, student_stream());
    grader::synchronize(call_text(0));
    const auto out = grader::read_back(p.out);
    if (!out.guards.intact() || !workbook::is_poison(out.values[0])) {
      FAIL(call_text(0) << " wrote to memory around out, where there is no element to write.");
    }
  }
}

TEST_CASE("Task 1: scale bandwidth against the copy bandwidth", "[task_1][perf]") {
  grader::require_gpu();
  const std::size_t n = workbook::fit_in_free_memory(@NAME@_benchmark::kGradedN, 2);
  CAPTURE(n);
  Problem p(n);
  scale(p.in.data(), p.out.data(), n, kFactor, student_stream());
  grader::synchronize(call_text(n));
  // A wrong result is not timed.
  REQUIRE_THAT(grader::read_back(p.out), grader::MatchesReference(p.expected, kExact));
  workbook::MeasureOptions timing = @NAME@_benchmark::graded_timing();
  timing.stream = student_stream();
  timing.profiled = true;  // the student's code: what a profiling run profiles
  const auto stats =
      workbook::measure([&](cudaStream_t s) { scale(p.in.data(), p.out.data(), n, kFactor, s); }, timing);
  const double gbps = workbook::gigabytes_per_second(@NAME@_benchmark::kBytesPerElement * n, stats.median_ms);
  const double copy_gbps = workbook::copy_bandwidth_gbps_for_run();
  grader::record_metric("profiled_bytes", @NAME@_benchmark::kBytesPerElement * n);  // what the profiled call moves
  grader::record_metric("n", double(n));
  grader::record_metric("median_ms", stats.median_ms);
  grader::record_metric("gbps", gbps);
  grader::record_metric("copy_bandwidth_gbps", copy_gbps);
  grader::record_metric("fraction_of_copy_bandwidth", gbps / copy_gbps);
}

TEST_CASE("Task 1: scale keeps its contract at every size", "[task_1]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  // The header's promises: the given stream only, no wait, no copy to or from the host, nothing
  // left behind.
  const grader::Contract contract = grader::given_stream_contract("scale");
  for (const std::size_t n : grader::test_sizes(256, large_size())) {
    CAPTURE(n);
    workbook::GuardedDeviceArray in(n, workbook::kInputGuardBits), out(n);
    grader::require_contract_kept(contract, {call_text(n), {student_stream()}, {}, {{"n", double(n)}}}, [&] {
      scale(in.data(), out.data(), n, kFactor, student_stream());
    });
  }
}
"""

BENCHMARK = """\
// What lesson @NUMBER@ times, declared once: the grader's timed test reads it, and so would the
// lesson's sweep (tools/bench/@SLUG@.cu, if it gets one; lessons 02-05 show how).
//
// (to write: the lesson's own.) Written by tools/new_lesson.py for the placeholder task: scale on
// n floats, each element moving 8 bytes (in read, out written). The figure of merit is the
// bandwidth as a fraction of the device's copy bandwidth, measured in the same run; task 1's timed
// test is the point n = kGradedN.
#pragma once

#include "@NAME@.hpp"

#include "workbook/workbook.hpp"

#include <cstddef>

namespace @NAME@_benchmark {

constexpr double kBytesPerElement = 8.0;                // in read, out written
constexpr std::size_t kGradedN = std::size_t{1} << 26;  // 256 MiB per array, far beyond L2

// How the grader times one call: a probe first, then warm-up and samples (workbook::measure).
inline workbook::MeasureOptions graded_timing() {
  workbook::MeasureOptions options;
  options.slow_ms = 200.0;  // a pathologically slow call is timed once
  options.precision = 0.01;  // enough samples to know the median to 1%, no more (measure())
  return options;
}

}  // namespace @NAME@_benchmark
"""

MANIFEST_HINTS = [
    "(to write: a nudge: a question that points at what the task needs, and the lesson section to reread)",
    "(to write: the concept: the idea or the API the task needs, and the section that explains it)",
    "(to write: near the answer: the steps in words, a line or two of code at most)",
]


def reflow(markdown: str, width: int = 96) -> str:
    """The Markdown with its paragraphs and list items wrapped at width, as the lessons are (the
    slug and the title change line lengths); headings, quotes, tables, markers and code left alone."""
    out: List[str] = []
    lines = markdown.split("\n")
    fixed = ("#", ">", "|", "<!--", "```")
    i, in_fence = 0, False
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_fence = not in_fence
        if in_fence or line.startswith(fixed) or not line.strip():
            out.append(line)
            i += 1
            continue
        item = line.startswith("- ")
        words = [line[2:] if item else line]
        i += 1
        while i < len(lines) and lines[i].strip() and not lines[i].startswith(fixed + ("- ",)) \
                and (not item or lines[i].startswith("  ")):
            words.append(lines[i].strip())
            i += 1
        out.extend(textwrap.wrap(" ".join(words), width, initial_indent="- " if item else "",
                                 subsequent_indent="  " if item else "", break_long_words=False,
                                 break_on_hyphens=False))
    return "\n".join(out)


def fill(template: str, values: Dict[str, str]) -> str:
    text = template
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    left = re.findall(r"@[A-Z_]+@", text)
    assert not left, f"unfilled placeholders {left}"
    return text


# ---------------------------------------------------------------------------------------------
# Hand-formatted JSON files, edited so that only the new lesson's lines change.

def dump_manifest(data: dict, original: str) -> str:
    """data in the manifest's own format: json.dumps with an indent of 2 and a final newline, non-ASCII
    text kept as it is when the file does so. Refuses a manifest written some other way, whose diff
    would be more than the new entry."""
    for ensure_ascii in (False, True):
        if json.dumps(json.loads(original), indent=2, ensure_ascii=ensure_ascii) + "\n" == original:
            return json.dumps(data, indent=2, ensure_ascii=ensure_ascii) + "\n"
    raise Refused("lessons/manifest.json is not laid out as json.dumps(..., indent=2) writes it, so adding a "
                  "lesson would rewrite more than its entry; lay it out that way first")


def dump_expectations(data: Dict[str, Dict[str, dict]]) -> str:
    """grader/tests' expected verdicts, laid out as they are written by hand: one line per task,
    {"01_vector_add": {\\n  "1": {...},\\n  "2": {...}},\\n "02_...": ...}."""
    lessons = []
    for slug, tasks in data.items():
        rows = ",\n".join(f"  {json.dumps(task)}: {json.dumps(kinds, ensure_ascii=False)}" for task, kinds in tasks.items())
        lessons.append(f"{json.dumps(slug)}: {{\n{rows}}}")
    return "{" + ",\n ".join(lessons) + "}\n"


def add_expectation(path: Path, slug: str, verdicts: Dict[str, dict]) -> str:
    original = path.read_text()
    data = json.loads(original)
    if dump_expectations(data) != original:
        raise Refused(f"{path} is not laid out as the other expected verdicts are (one line per task), so "
                      "adding a lesson would rewrite more than its entry")
    if slug in data:
        raise Refused(f"{path} already has verdicts for {slug}")
    data[slug] = verdicts
    return dump_expectations(dict(sorted(data.items())))


def register_contract_hints(text: str, slug: str, task: int) -> str:
    """grader/hints.json with the lesson's task added to the "lessons" of each hint the contract
    checker can print for it. The registry is laid out by hand, so its "lessons" lines are edited
    in place; the result is checked by reading it back."""
    data = json.loads(text)
    lines = text.split("\n")
    for hint_id in CONTRACT_HINTS:
        at = next((i for i, line in enumerate(lines) if line.strip() == f'"id": {json.dumps(hint_id)},'), None)
        hint = next((h for h in data["hints"] if h["id"] == hint_id), None)
        if at is None or hint is None or at + 1 >= len(lines) or not lines[at + 1].strip().startswith('"lessons": {'):
            raise Refused(f"grader/hints.json: no hint {hint_id!r} with a \"lessons\" object on the line after its id")
        lessons = hint["lessons"]
        if lessons == "all":
            continue
        lessons[slug] = [task]
        indent = lines[at + 1][:len(lines[at + 1]) - len(lines[at + 1].lstrip())]
        lines[at + 1] = f'{indent}"lessons": {json.dumps(lessons, ensure_ascii=False)},'
    new = "\n".join(lines)
    if json.loads(new) != data:
        raise Refused("grader/hints.json: the edited \"lessons\" lines do not read back as intended")
    return new


# ---------------------------------------------------------------------------------------------

def check_request(root: Path, slug: str, title: str) -> dict:
    """Raises Refused unless the lesson can be added to the project at root; returns the manifest."""
    match = SLUG.match(slug)
    if not match:
        raise Refused(f"{slug!r} is not a lesson slug: two digits, an underscore and a lower-case name that "
                      "starts with a letter (letters, digits, underscores), e.g. 08_scans")
    if not title.strip() or "\n" in title or "|" in title or title != title.strip():
        raise Refused(f"the title {title!r} must be one line of text without '|' (it is a cell of README.md's "
                      "lesson table) and without leading or trailing spaces")
    manifest_path = root / "lessons" / "manifest.json"
    if not manifest_path.is_file():
        raise Refused(f"{root} has no lessons/manifest.json: is --root the project's top folder?")
    for needed in ("grader/hints.json", "grader/tests/expected/exercises.json", "grader/tests/expected/solutions.json",
                   "grader/tests/students/plain/expected.json"):
        if not (root / needed).is_file():
            raise Refused(f"{root} has no {needed}: add lessons in the instructors' repository, not in a student "
                          "release (tools/make_release.py leaves the solutions' files out)")
    try:
        manifest = json.loads(manifest_path.read_text())
    except ValueError as e:
        raise Refused(f"lessons/manifest.json cannot be read: {e}") from e
    slugs = [lesson["slug"] for lesson in manifest.get("lessons", [])]
    if slug in slugs:
        raise Refused(f"lesson {slug} exists already (lessons/manifest.json)")
    number = int(match.group(1))
    last = max((int(s[:2]) for s in slugs if s[:2].isdigit()), default=0)
    if number <= last:
        raise Refused(f"lesson number {match.group(1)} is not after the last lesson's ({last:02d}, "
                      f"{slugs[-1] if slugs else ''}): a new lesson is numbered {last + 1:02d} or later")
    for folder in ("lessons", "exercises", "solutions", "grader", "grader/tests/students/plain"):
        if (root / folder / slug).exists():
            raise Refused(f"{folder}/{slug} exists already; remove it or choose another slug")
    return manifest


def plan(root: Path, slug: str, title: str, manifest: dict) -> Dict[Path, str]:
    """Every file the new lesson writes or changes, with its new text (nothing written yet)."""
    number, name = SLUG.match(slug).groups()
    values = {"SLUG": slug, "NUMBER": number, "NAME": name, "TITLE": title}
    entry = {
        "slug": slug,
        "title": title,
        "sources": [f"{name}.cu"],
        "timeout_s": 60,
        "sanitizers": ["memcheck"],
        "tasks": [{
            "id": 1,
            "title": f"{TASK_FUNCTION}: out = a * in on the stream it is given (placeholder; to write: the task)",
            "points": {"correctness": 3, "performance": 2},
            "performance": {"metric": "fraction_of_copy_bandwidth", "threshold": 0.5},
            "hints": list(MANIFEST_HINTS),
        }],
    }
    manifest_text = (root / "lessons" / "manifest.json").read_text()
    manifest["lessons"] = sorted(manifest["lessons"] + [entry], key=lambda lesson: lesson["slug"])
    tests = root / "grader" / "tests"
    files = {
        root / "lessons" / "manifest.json": dump_manifest(manifest, manifest_text),
        root / "lessons" / slug / "README.md": reflow(fill(README, values)),
        root / "lessons" / slug / f"{name}.hpp": fill(HEADER, values),
        root / "lessons" / slug / "examples" / f"{name}.cu": fill(EXAMPLE, values),
        root / "exercises" / slug / f"{name}.cu": fill(EXERCISE, values),
        root / "solutions" / slug / f"{name}.cu": fill(SOLUTION, values),
        root / "grader" / slug / f"{name}_test.cu": fill(GRADER_TEST, values),
        root / "grader" / slug / "benchmark.hpp": fill(BENCHMARK, values),
        tests / "students" / "plain" / slug / f"{name}.cu": fill(PLAIN_STUDENT, values),
        tests / "expected" / "exercises.json":
            add_expectation(tests / "expected" / "exercises.json", slug,
                            {"1": {"correctness": "not_implemented", "performance": "not_run"}}),
        tests / "expected" / "solutions.json":
            add_expectation(tests / "expected" / "solutions.json", slug,
                            {"1": {"correctness": "passed", "performance": "passed"}}),
        tests / "students" / "plain" / "expected.json":
            add_expectation(tests / "students" / "plain" / "expected.json", slug,
                            {"1": {"correctness": "passed", "performance": "passed"}}),
        root / "grader" / "hints.json": register_contract_hints((root / "grader" / "hints.json").read_text(), slug, 1),
    }
    return files


def generators(root: Path) -> List[Tuple[str, List[str]]]:
    """The project's own generators, as (what to show, the command), in the order they depend on each
    other; each is run from root, so a copy of the project (--root) is regenerated by its own tools."""
    python = sys.executable
    return [("python3 -m grader.driver.skeleton --write", [python, "-m", "grader.driver.skeleton", "--write"]),
            ("tools/lesson_index.py", [python, str(root / "tools" / "lesson_index.py")]),
            ("tools/snippets.py", [python, str(root / "tools" / "snippets.py")]),
            ("tools/hint_catalogue.py", [python, str(root / "tools" / "hint_catalogue.py")])]


def main(argv: Optional[Sequence[str]] = None, out: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/new_lesson.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  tools/new_lesson.py 08_scans \"Scans: prefix sums in a block and across the grid\"\n"
               "  tools/new_lesson.py --root /tmp/workbook-copy 08_scaffold_check \"Scaffold check\"\n"
               "then: ./grade 06 (\"not implemented yet\"), ./grade --tree solutions 06 (full marks, on a GPU)")
    parser.add_argument("slug", help="NN_name: two digits after the last lesson's number, then the lesson's name")
    parser.add_argument("title", help="the lesson's title, as README.md's lesson table shows it")
    parser.add_argument("--root", default=str(ROOT),
                        help="the project to add the lesson to (default: this checkout, %(default)s)")
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    try:
        manifest = check_request(root, args.slug, args.title)
        files = plan(root, args.slug, args.title, manifest)
    except Refused as e:
        print(f"new_lesson: refused: {e}", file=sys.stderr)
        return EXIT_REFUSED

    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out(f"wrote {path.relative_to(root)}")
    for shown, command in generators(root):
        result = subprocess.run(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in result.stdout.splitlines():
            out(f"  {line}")
        if result.returncode != 0:
            print(f"new_lesson: {shown} failed (exit status {result.returncode}); the files above are written",
                  file=sys.stderr)
            return EXIT_FAILED
        out(f"ran {shown}")
    number = args.slug[:2]
    out(f"\nLesson {args.slug} builds and grades now: ./grade {number} says \"not implemented yet\", and "
        f"./grade --tree solutions {number} gives full marks on a GPU. Next: replace the placeholder task "
        f"scale and every \"(to write: ...)\" (git grep -n 'to write'). No sweep was "
        "declared: a sweep is tools/bench/NN_name.cu plus a \"sweep\" in the lesson's manifest entry (README.md, "
        "\"Adding a lesson\").")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
