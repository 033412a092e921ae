// Lesson 02, task 2: launch_multiply_add, a launcher that checks its configuration.
//
// What is checked: at the correctness sizes, the large one included, every block from 32 to 1024
// with an auto grid, an exact grid and one far smaller than n needs: what it launched (the tracer:
// one multiply_add, the block and grid asked for, an auto grid within its documented range) and
// y; n = 0 launches nothing; invalid configurations throw; it launches on the stream it is given
// (captured into a CUDA graph). Its contract (contract.hpp) at every size and configuration: on
// the given stream, no wait, nothing left behind. Performance: GB/s at 2^28 elements with an auto
// grid.
#include "multiply_add_grader.hpp"

#include <catch2/catch_test_macros.hpp>

#include "contract.hpp"
#include "diagnosis.hpp"

#include <algorithm>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

using grader::HintId;
using namespace multiply_add_grader;

namespace {

int sm_count() {
  static const int count = workbook::query_device(0).sm_count;
  return count;
}

// What the launcher launched, against what it was asked for: exactly one multiply_add, the
// block given, and the grid given or, for auto, the documented range: at most (n + block - 1)
// / block blocks (none idle) and at least min(SM count, that) (every SM busy when n allows).
// Returns "" when right, else what is wrong with the trace as evidence; \p threads receives
// the kernel's grid x block.
std::string launch_problems(const grader::Trace& t, int n, const LaunchConfig& c, long long& threads) {
  const auto kernels = t.kernels_named("multiply_add");
  std::ostringstream out;
  if (kernels.size() != 1 || t.kernels.size() != 1) {
    out << "it launched " << t.kernels.size() << " kernel(s), " << kernels.size()
        << " of them multiply_add: one call launches multiply_add once.";
  } else {
    const grader::TracedKernel& k = kernels[0];
    threads = 1LL * k.grid.x * k.block.x;
    const long long needed = (static_cast<long long>(n) + c.block - 1) / c.block;
    const long long least = std::min<long long>(needed, sm_count());
    if (k.block.x != static_cast<unsigned>(c.block) || k.block.y != 1 || k.block.z != 1) {
      out << "it was asked for blocks of " << c.block << " threads and launched " << grader::launch_text(k) << ".";
    } else if (c.grid > 0 && k.grid.x != static_cast<unsigned>(c.grid)) {
      out << "it was asked for a grid of " << c.grid << " blocks and launched " << grader::launch_text(k) << ".";
    } else if (c.grid == 0 && (k.grid.x > needed || k.grid.x < least)) {
      out << "with grid = 0 (auto) it launched " << grader::launch_text(k) << " for n = " << n
          << ". An auto grid has at most (n + block - 1) / block = " << needed << " blocks (no block without work) "
          << "and at least " << least << " (one per SM, " << sm_count() << " here, when n allows).";
    } else if (k.stream_known && !grader::is_default_stream(k.stream)) {
      out << "it was called without a stream (the default stream) and launched on " << grader::stream_text(k.stream)
          << ".";
    }
  }
  const std::string text = out.str();
  return text.empty() ? text : text + "\nWhat the grader saw on the GPU during the call:\n" + t.describe();
}

}  // namespace

TEST_CASE("Task 2: launch_multiply_add launches valid configurations correctly", "[task_2]") {
  grader::require_gpu();
  require_writes("launch_multiply_add(n = 1000, block 256, grid auto)", [](Problem& p) {
    launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0});
  });
  const std::size_t large = workbook::fit_in_free_memory(kLargeCorrectness, 3);
  for (const std::size_t n : grader::test_sizes(256, large)) {
    Problem p(n, "task 2");
    std::vector<LaunchConfig> configs;
    for (const int block : {32, 64, 128, 256, 512, 1024, 96}) configs.push_back({block, 0});  // auto grids
    configs.push_back({256, blocks_for(n, 256)});
    if (n <= (std::size_t{1} << 22)) configs.push_back({128, 5});  // a grid far smaller than n needs
    for (const LaunchConfig& c : configs) {
      CAPTURE(n, c.block, c.grid, p.b);
      p.y.poison();
      const auto trace = grader::trace([&] { launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), c); });
      long long threads = -1;
      if (trace) {
        const std::string problems = launch_problems(*trace, p.n(), c, threads);
        if (!problems.empty()) {
          FAIL("launch_multiply_add(n = " << n << ", block " << c.block << ", grid " << c.grid << ") launched the "
               << "wrong thing: " << problems);
        }
      }
      check_output(p, threads);
    }
  }
  SECTION("n = 0 is valid and launches nothing") {
    Problem p(1, "task 2 n = 0");
    std::exception_ptr thrown;
    const auto trace = grader::trace(
        [&] { launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), 0, {256, 0}); }, thrown);
    if (thrown) {
      std::string what = "an exception that is not a std::exception";
      try {
        std::rethrow_exception(thrown);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      // The tracer saw the launch it made: a grid of 0 blocks is what CUDA rejected.
      const grader::TracedCall* empty = trace ? trace->empty_grid_launch() : nullptr;
      FAIL("launch_multiply_add(n = 0) threw: " << what << "\nWith n = 0 there is nothing to do.\n"
           << (empty ? grader::hint(HintId::launcher_empty_grid, "it launched a grid of 0 blocks, which CUDA "
                                                                 "rejects: return before launching when n == 0.")
                     : std::string()));
    }
    if (trace && !trace->kernels.empty()) {
      FAIL("launch_multiply_add(n = 0) launched " << trace->kernels.size() << " kernel(s); with nothing to do it "
           "launches nothing.\n" << trace->describe());
    }
  }
}

TEST_CASE("Task 2: launch_multiply_add rejects invalid configurations with an error", "[task_2]") {
  grader::require_gpu();
  Problem p(1000, "task 2 invalid");
  struct Invalid { int n; LaunchConfig config; const char* what; };
  const Invalid cases[] = {
      {1000, {2048, 0}, "block = 2048 threads (the maximum is 1024)"},
      {1000, {0, 0}, "block = 0 threads"},
      {1000, {-32, 0}, "block = -32 threads"},
      {1000, {256, -1}, "grid = -1 blocks"},
      {-5, {256, 0}, "n = -5"},
  };
  for (const Invalid& c : cases) {
    CAPTURE(c.what);
    bool threw = false;
    try {
      launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), c.n, c.config);
    } catch (const std::exception&) {
      threw = true;
    }
    const cudaError_t pending = cudaGetLastError();  // clears an error a launch left behind
    if (!threw) {  // an impossible configuration returned without an exception
      FAIL("launch_multiply_add with " << c.what << " returned as if it had launched"
           << (pending != cudaSuccess ? std::string(", but CUDA had rejected the launch: ") + cudaGetErrorName(pending)
                                      : std::string())
           << ".\n" << grader::hint(HintId::launcher_no_validation, "it returned normally for a configuration that "
           "cannot run: check the configuration before launching and throw std::invalid_argument with a message "
              "that says what is wrong; WORKBOOK_CHECK_LAUNCH() after the launch catches what CUDA itself rejects."));
    }
  }
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST_CASE("Task 2: launch_multiply_add launches on the stream it is given", "[task_2]") {
  grader::require_gpu();
  Problem p(1 << 16, "task 2 stream");
  workbook::Stream stream(cudaStreamNonBlocking);
  // Capture the stream into a CUDA graph: a launch on this stream becomes a node of the
  // graph; a launch anywhere else does not.
  WORKBOOK_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeRelaxed));
  std::string error;
  try {
    launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, stream.get());
  } catch (const std::exception& e) {
    error = e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream.get(), &graph);
  (void)cudaGetLastError();
  std::size_t nodes = 0;
  if (graph != nullptr) {
    WORKBOOK_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    if (nodes == 1) {  // run what was captured and check it did the work
      cudaGraphExec_t exec = nullptr;
      p.y.poison();
      WORKBOOK_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      WORKBOOK_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
      stream.synchronize();
      WORKBOOK_CUDA_CHECK(cudaGraphExecDestroy(exec));
    }
    WORKBOOK_CUDA_CHECK(cudaGraphDestroy(graph));
  }
  WORKBOOK_CUDA_CHECK(cudaDeviceSynchronize());
  if (!error.empty() || end != cudaSuccess || nodes != 1) {
    // Where did the kernel go? The same call, traced outside the capture, shows its stream.
    std::string elsewhere;
    if (error.empty() && end == cudaSuccess && nodes == 0) {
      const auto t = grader::trace(
          [&] { launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, stream.get()); });
      for (const auto& k : t ? t->program_kernels() : std::vector<grader::TracedKernel>{}) {
        if (k.stream_known && k.stream != stream.get()) elsewhere = grader::stream_text(k.stream);
      }
    }
    FAIL("launch_multiply_add(..., stream) did not launch exactly one kernel on that stream"
         << (error.empty() ? std::string() : " (it threw: " + error + ")")
         << (end != cudaSuccess ? std::string(" (stream capture failed: ") + cudaGetErrorName(end) + ")" : std::string())
         << ", captured launches: " << nodes << ".\n"
         // Nothing captured, nothing thrown, the capture intact: the kernel went to another stream.
         << (!elsewhere.empty()
                 ? grader::hint(HintId::launcher_stream, "it launched on " + elsewhere + " instead of the stream it "
                                                         "was given: pass the stream as the fourth launch parameter, "
                                                         "multiply_add<<<grid, block, 0, stream>>>(...).")
                 : std::string()));
  }
  check_output(p);
}

TEST_CASE("Task 2: launch_multiply_add bandwidth with an auto grid", "[task_2][perf]") {
  grader::require_gpu();
  const std::size_t n = workbook::fit_in_free_memory(multiply_add_benchmark::kGradedN, 3);
  Problem p(n, "task 2 perf");
  launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0});
  check_output(p);
  const auto stats = time_launch([&](cudaStream_t s) {
    launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), {256, 0}, s);
  });
  record_bandwidth(n, stats);
}

// ============================ The contract, at every shape ============================
// What multiply_add.hpp promises of launch_multiply_add, as grader::Contract
// (grader/support/contract.hpp), held against a traced call at several sizes and configurations,
// after one untraced call. This runs after the tests above, whose verdicts say more where they
// apply.

TEST_CASE("Task 2: launch_multiply_add keeps its contract for every size and configuration", "[task_2]") {
  grader::require_gpu();
  if (grader::sanitize_mode()) SKIP("the tracer is not available under compute-sanitizer");
  // Everything on the stream it is given; it returns without waiting; nothing left behind.
  const grader::Contract contract = grader::given_stream_contract("launch_multiply_add");
  workbook::Stream stream(cudaStreamNonBlocking);
  // The correctness tests' sizes, the large one included: a launcher that honours its stream only
  // below some size is caught at that size.
  const std::size_t large = workbook::fit_in_free_memory(kLargeCorrectness, 3);
  for (const std::size_t n : grader::test_sizes(256, large)) {
    Problem p(n, "task 2 contract");
    for (const LaunchConfig config : {LaunchConfig{256, 0}, LaunchConfig{128, 7}, LaunchConfig{1024, 0}}) {
      const std::string text = "launch_multiply_add(n = " + std::to_string(n) + ", block " +
                               std::to_string(config.block) + ", grid " +
                               (config.grid ? std::to_string(config.grid) : std::string("auto")) + ", stream)";
      CAPTURE(text);
      grader::require_contract_kept(contract, {text, {stream.get()}, {}, {{"n", double(n)}}}, [&] {
        launch_multiply_add(p.x1.data(), p.x2.data(), p.b, p.y.data(), p.n(), config, stream.get());
      });
    }
  }
}
