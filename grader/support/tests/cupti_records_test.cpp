// The CUPTI activity records the tracer reads, pinned for the CUPTI headers this build was
// compiled with. GPU-free: CI runs it with CUDA 13 and with CUDA 12.4.
//
// tracer.cpp casts each activity record to one struct per kind, chosen by CUPTI_API_VERSION
// (grader::cupti_records() names them). The CUPTI library fills in the struct that its header
// documents for the kind: the \ref in the comment above CUPTI_ACTIVITY_KIND_MEMCPY and its
// neighbours in cupti_activity.h. These are not always the tracer's choice: CUPTI 12.8 and 12.9
// document CUpti_ActivityMemcpy6 while the tracer reads CUpti_ActivityMemcpy5 there. What must
// hold is that every field the tracer reads sits at the same offset, with the same size, in
// the struct it chose and in the documented one; this file checks that at compile time for
// every pair of candidates the header defines, and at run time against the header's own text.
// It does not check what a running GPU writes into the records (tracer_gpu_test.cu does).
#include "tracer.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cupti.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef WORKBOOK_CUPTI_INCLUDE_DIR
#error "grader/CMakeLists.txt passes the folder of the cupti.h this test is compiled with"
#endif

namespace {

// The fields take_record (tracer.cpp) reads from each record; kind through CUpti_Activity,
// the common head of every record.
#define WORKBOOK_KERNEL_FIELDS(X) \
  X(kind) X(name) X(gridX) X(gridY) X(gridZ) X(blockX) X(blockY) X(blockZ) X(streamId) X(start) X(end) X(correlationId)
#define WORKBOOK_MEMCPY_FIELDS(X)                                                                                   \
  X(kind) X(copyKind) X(srcKind) X(dstKind) X(bytes) X(flags) X(streamId) X(start) X(end) X(correlationId) \
  X(runtimeCorrelationId)
#define WORKBOOK_MEMSET_FIELDS(X) X(kind) X(bytes) X(streamId) X(start) X(end)

// Record structs each CUPTI defines (current or deprecated): Kernel9, Memcpy5 and Memset4 in
// every CUPTI from 12.4 on; Memcpy6 from CUPTI_API_VERSION 26 (CUDA 12.8; 12.6 is 24 and has
// none); Kernel10 from CUPTI 13.
#define WORKBOOK_HAS_MEMCPY6 (CUPTI_API_VERSION >= 26)
#define WORKBOOK_HAS_KERNEL10 (CUPTI_API_VERSION >= 130000)

// Compile time: a field read at one place in one candidate and another in the other would be
// misread by whichever the tracer did not choose.
#define WORKBOOK_SAME_FIELD(A, B, f)                                                                 \
  static_assert(offsetof(A, f) == offsetof(B, f) && std::is_same_v<decltype(A::f), decltype(B::f)>, \
                #A "::" #f " and " #B "::" #f " differ: the tracer would misread " #f);
#define WORKBOOK_KERNEL9_VS_10(f) WORKBOOK_SAME_FIELD(CUpti_ActivityKernel9, CUpti_ActivityKernel10, f)
#define WORKBOOK_MEMCPY5_VS_6(f) WORKBOOK_SAME_FIELD(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, f)
#define WORKBOOK_KIND_FIRST(A) static_assert(offsetof(A, kind) == offsetof(CUpti_Activity, kind), #A " starts elsewhere");
#if WORKBOOK_HAS_KERNEL10
WORKBOOK_KERNEL_FIELDS(WORKBOOK_KERNEL9_VS_10)
WORKBOOK_KIND_FIRST(CUpti_ActivityKernel10)
#endif
#if WORKBOOK_HAS_MEMCPY6
WORKBOOK_MEMCPY_FIELDS(WORKBOOK_MEMCPY5_VS_6)
WORKBOOK_KIND_FIRST(CUpti_ActivityMemcpy6)
#endif
WORKBOOK_KIND_FIRST(CUpti_ActivityKernel9)
WORKBOOK_KIND_FIRST(CUpti_ActivityMemcpy5)
WORKBOOK_KIND_FIRST(CUpti_ActivityMemset4)

// Run time: the same fields, as offsets and sizes per struct name, for the names the tracer
// reports and the header documents.
struct Field {
  const char* name;
  std::size_t offset, size;
};
using Layout = std::vector<Field>;

#define WORKBOOK_FIELD(f) Field{#f, offsetof(Record, f), sizeof(Record::f)},
template <class Record>
Layout kernel_layout() { return {WORKBOOK_KERNEL_FIELDS(WORKBOOK_FIELD)}; }
template <class Record>
Layout memcpy_layout() { return {WORKBOOK_MEMCPY_FIELDS(WORKBOOK_FIELD)}; }
template <class Record>
Layout memset_layout() { return {WORKBOOK_MEMSET_FIELDS(WORKBOOK_FIELD)}; }

const std::map<std::string, Layout>& known_records() {
  static const std::map<std::string, Layout> records = {
      {"CUpti_ActivityKernel9", kernel_layout<CUpti_ActivityKernel9>()},
#if WORKBOOK_HAS_KERNEL10
      {"CUpti_ActivityKernel10", kernel_layout<CUpti_ActivityKernel10>()},
#endif
      {"CUpti_ActivityMemcpy5", memcpy_layout<CUpti_ActivityMemcpy5>()},
#if WORKBOOK_HAS_MEMCPY6
      {"CUpti_ActivityMemcpy6", memcpy_layout<CUpti_ActivityMemcpy6>()},
#endif
      {"CUpti_ActivityMemset4", memset_layout<CUpti_ActivityMemset4>()},
  };
  return records;
}

// "" when each field sits at the same offset with the same size in both; else one line per
// field that does not.
std::string layout_differences(const std::string& chosen, const std::string& documented) {
  const Layout& a = known_records().at(chosen);
  const Layout& b = known_records().at(documented);
  std::ostringstream out;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].offset != b[i].offset || a[i].size != b[i].size) {
      out << a[i].name << ": offset " << a[i].offset << ", " << a[i].size << " bytes in " << chosen << "; offset "
          << b[i].offset << ", " << b[i].size << " bytes in " << documented << "\n";
    }
  }
  return out.str();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

// The struct the doc comment just above the enumerator `kind = value` names ("\ref Name"), or "".
std::string documented_record(const std::string& header, const std::string& kind) {
  std::size_t at = 0;
  while ((at = header.find(kind, at)) != std::string::npos) {
    std::size_t after = at + kind.size();
    while (after < header.size() && header[after] == ' ') ++after;
    const bool enumerator = after < header.size() && header[after] == '=' &&
                            (at == 0 || !(std::isalnum(static_cast<unsigned char>(header[at - 1])) || header[at - 1] == '_'));
    if (enumerator) break;
    at = after;
  }
  if (at == std::string::npos) return "";
  const std::size_t open = header.rfind("/**", at), close = header.rfind("*/", at);
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  if (header.find_first_not_of(" \t\r\n", close + 2) != at) return "";  // that comment is not this enumerator's
  const std::string comment = header.substr(open, close - open);
  std::size_t ref = comment.find("\\ref");
  if (ref == std::string::npos) return "";
  ref += 4;
  // "\ref" may end a line: the name is on the next, after the comment's " * ".
  while (ref < comment.size() && (std::isspace(static_cast<unsigned char>(comment[ref])) || comment[ref] == '*')) ++ref;
  std::size_t end = ref;
  while (end < comment.size() && (std::isalnum(static_cast<unsigned char>(comment[end])) || comment[end] == '_')) ++end;
  return comment.substr(ref, end - ref);
}

// CUPTI_API_VERSION counts on (18 in CUDA 12.0 ... 28 in 12.9) until CUDA 13, which numbers it
// major * 10000 + minor * 100 + update (130001). Records were renumbered at 13.
int cuda_major_of_cupti(std::uint32_t api_version) { return api_version >= 130000 ? int(api_version / 10000) : 12; }

}  // namespace

TEST_CASE("the tracer reads Kernel10 and Memcpy6 records with CUPTI 13's headers, Kernel9 and Memcpy5 with 12's",
          "[tracer][cupti]") {
  const grader::CuptiRecords records = grader::cupti_records();
  INFO("tracer.cpp was compiled with CUPTI_API_VERSION " << records.api_version << ": it reads "
       << records.kernel_record << ", " << records.memcpy_record << ", " << records.memset_record);
  CHECK(records.api_version == CUPTI_API_VERSION);  // the headers this test sees
  if (CUPTI_API_VERSION >= 130000) {
    CHECK(std::string(records.kernel_record) == "CUpti_ActivityKernel10");
    CHECK(std::string(records.memcpy_record) == "CUpti_ActivityMemcpy6");
  } else {
    CHECK(std::string(records.kernel_record) == "CUpti_ActivityKernel9");
    CHECK(std::string(records.memcpy_record) == "CUpti_ActivityMemcpy5");
  }
  CHECK(std::string(records.memset_record) == "CUpti_ActivityMemset4");
}

TEST_CASE("each field the tracer reads sits where the record cupti_activity.h documents has it", "[tracer][cupti]") {
  const std::string dir = WORKBOOK_CUPTI_INCLUDE_DIR;
  const std::string header = read_file(dir + "/cupti_activity.h");
  const std::string version = read_file(dir + "/cupti_version.h");
  if (header.empty() || version.empty()) {
    SKIP("the CUPTI headers this test was compiled with are no longer in " << dir);
  }
  // The folder holds the headers the compiler saw, not another CUPTI's.
  INFO("CUPTI headers in " << dir);
  CHECK(version.find("#define CUPTI_API_VERSION " + std::to_string(CUPTI_API_VERSION)) != std::string::npos);

  const grader::CuptiRecords records = grader::cupti_records();
  const std::pair<const char*, std::string> kinds[] = {
      {"CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", records.kernel_record},
      {"CUPTI_ACTIVITY_KIND_KERNEL", records.kernel_record},
      {"CUPTI_ACTIVITY_KIND_MEMCPY", records.memcpy_record},
      {"CUPTI_ACTIVITY_KIND_MEMSET", records.memset_record}};
  for (const auto& [kind, chosen] : kinds) {
    const std::string documented = documented_record(header, kind);
    CAPTURE(kind, chosen, documented);
    REQUIRE_FALSE(documented.empty());  // the header's comment no longer names a struct here
    REQUIRE(known_records().count(chosen) == 1);
    if (known_records().count(documented) == 0) {
      FAIL("cupti_activity.h documents " << documented << " for " << kind << ", which this test does not know: add "
           "it to known_records(), then see whether the tracer must read it instead of " << chosen);
    }
    const std::string differences = layout_differences(chosen, documented);
    INFO(differences);
    CHECK(differences.empty());
  }
}

TEST_CASE("the CUPTI library loaded belongs to the CUDA the tracer was compiled for", "[tracer][cupti]") {
  std::uint32_t loaded = 0;
  const CUptiResult result = cuptiGetVersion(&loaded);
  if (result != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    SKIP("CUPTI's library did not tell its version: " << (text ? text : "unknown error"));
  }
  const std::uint32_t compiled = grader::cupti_records().api_version;
  INFO("the tracer was compiled with CUPTI_API_VERSION " << compiled << " (CUDA " << cuda_major_of_cupti(compiled)
       << "); the library loaded says " << loaded << " (CUDA " << cuda_major_of_cupti(loaded) << "). With another "
       "CUDA's library the tracer would misread its records: put the toolkit's own lib64 first on LD_LIBRARY_PATH.");
  CHECK(cuda_major_of_cupti(loaded) == cuda_major_of_cupti(compiled));
  CHECK(loaded >= compiled);  // a library older than its headers may lack what they declare
}
