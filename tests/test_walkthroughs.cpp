// tests/test_walkthroughs.cpp: the walk-throughs of tutorials 00-03 and 06, the GPU debugging page, the
// trace cheat sheet and the page of words and kernel names quote only what their committed outputs
// say, and the tutorials judge their kernel counts right.
//
// The citation rule of the pages: an HTML comment
//     <!-- from docs/h200-runs/01_matmul_add/64_warm.out.txt [more files] -->
// names the files (relative to the repository) that everything after it quotes, up to the next
// such comment or the next heading. Below it,
//   - every line of a plain fenced block (``` or ```text) is in one of those files, verbatim
//     (trailing spaces aside), or with "…" where columns of a wide table are left out (the pieces
//     between, in order, in one line: ts::testing::excerpt_in); blocks fenced as ```sh, ```python
//     or ```cpp are code, not quotes;
//   - every decimal number of the prose (12.345) is in one of those files, as a number (not part
//     of a longer one), except the result of a derivation written "(arithmetic: a / b = c)", whose
//     inputs left of the last '=' are checked and whose result is not. Paths and link targets
//     are not prose.
// A quote with no comment above it in its section fails, and so does a comment that names a file
// outside the folders no other tool writes into (tools/refresh_walkthroughs.sh's two folders and
// the PyTorch reference).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/quote_check.h"
#include "tests/support/synthetic_events.h"
#include "tutorials/tutorial_support.h"

#ifndef TS_SOURCE_DIR
#error "TS_SOURCE_DIR must name the checkout (set in CMakeLists.txt)"
#endif

namespace {

std::string read_file(const std::string& relative) {
  std::ifstream in(std::string(TS_SOURCE_DIR) + "/" + relative, std::ios::binary);
  if (!in.good()) return {};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// `number` occurs in `text` as a whole number: no digit or '.' before it, no digit after it.
bool has_number(const std::string& text, const std::string& number) {
  for (size_t at = text.find(number); at != std::string::npos; at = text.find(number, at + 1)) {
    const bool digit_before = at > 0 && (std::isdigit(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '.');
    const size_t end = at + number.size();
    const bool digit_after = end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]));
    if (!digit_before && !digit_after) return true;
  }
  return false;
}

// The folders a page may cite: outputs that only tools/refresh_walkthroughs.sh writes, PyTorch's,
// and the articles' lines that a page compares with (docs/series/).
bool citable(const std::string& path) {
  return starts_with(path, "docs/h200-runs/") || starts_with(path, "docs/cpu-runs/") ||
         starts_with(path, "docs/pytorch-reference/") || starts_with(path, "docs/series/");
}

struct PageCheck {
  int numbers = 0, excerpt_lines = 0, citations = 0;
  std::vector<std::string> failures;  // "page:line: why"
};

// Prose with its paths, link targets and derivation results taken out: what must be quoted.
std::string quoted_prose(const std::string& line) {
  static const std::regex link_target(R"(\]\([^)]*\))");
  static const std::regex path_span(R"(`[^`]*/[^`]*`)");
  static const std::regex bare_path(R"([A-Za-z0-9_.-]*/[A-Za-z0-9_./#*-]+)");
  static const std::regex arithmetic(R"(\(arithmetic:([^)]*)\))");
  std::string s = std::regex_replace(line, link_target, "]");
  s = std::regex_replace(s, path_span, " ");
  std::string out;
  auto begin = s.cbegin();
  for (std::sregex_iterator it(s.begin(), s.end(), arithmetic), end; it != end; ++it) {
    out.append(begin, s.cbegin() + it->position());
    const std::string inside = (*it)[1].str();
    out += " " + inside.substr(0, inside.rfind('=')) + " ";
    begin = s.cbegin() + it->position() + it->length();
  }
  out.append(begin, s.cend());
  return std::regex_replace(out, bare_path, " ");
}

PageCheck check_page(const std::string& page) {
  static const std::regex from(R"(^<!-- from ((?:\S+ )+)-->\s*$)");
  static const std::regex decimal(R"(\d+\.\d+)");
  PageCheck c;
  const std::string text = read_file(page);
  if (text.empty()) {
    c.failures.push_back(page + ": cannot read the page");
    return c;
  }
  std::vector<std::string> sources;
  std::string corpus;
  bool in_block = false, quote_block = false;
  int line_no = 0;
  std::istringstream lines(text);
  auto fail = [&](const std::string& why) { c.failures.push_back(fmt::format("{}:{}: {}", page, line_no, why)); };
  for (std::string line; std::getline(lines, line);) {
    ++line_no;
    if (starts_with(line, "```")) {
      if (!in_block) {
        const std::string lang = line.substr(3);
        quote_block = lang.empty() || lang == "text";
        if (quote_block && sources.empty()) fail("a quoted block with no <!-- from ... --> above it in its section");
      }
      in_block = !in_block;
      continue;
    }
    if (in_block) {
      if (!quote_block || sources.empty()) continue;
      std::string trimmed = line;
      while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\r')) trimmed.pop_back();
      if (trimmed.empty()) continue;
      ++c.excerpt_lines;
      if (!ts::testing::excerpt_in(corpus, trimmed))
        fail(fmt::format("excerpt line not in {}: {}", fmt::join(sources, " "), trimmed));
      continue;
    }
    std::smatch m;
    if (std::regex_match(line, m, from)) {
      sources.clear();
      corpus.clear();
      std::istringstream names(m[1].str());
      for (std::string name; names >> name;) {
        ++c.citations;
        if (!citable(name))
          fail("cites " + name + ", outside the refresh script's folders, the PyTorch reference and the articles");
        const std::string body = read_file(name);
        if (body.empty()) fail("cites " + name + ", which does not exist or is empty");
        sources.push_back(name);
        corpus += body + "\n";
      }
      continue;
    }
    if (starts_with(line, "#")) {  // a heading ends the citation's reach
      sources.clear();
      corpus.clear();
      continue;
    }
    if (starts_with(line, "<!--")) continue;
    const std::string prose = quoted_prose(line);
    for (std::sregex_iterator it(prose.begin(), prose.end(), decimal), end; it != end; ++it) {
      ++c.numbers;
      if (sources.empty())
        fail("the number " + it->str() + " has no <!-- from ... --> above it in its section");
      else if (!has_number(corpus, it->str()))
        fail(fmt::format("{} is not in {}", it->str(), fmt::join(sources, " ")));
    }
  }
  return c;
}

void require_page(const std::string& page, int min_numbers, int min_excerpt_lines) {
  const PageCheck c = check_page(page);
  for (const std::string& f : c.failures) FAIL_CHECK(f);
  INFO(page, ": ", c.numbers, " numbers, ", c.excerpt_lines, " excerpt lines, ", c.citations, " citations");
  CHECK(c.failures.empty());
  CHECK(c.numbers >= min_numbers);  // the page quotes, and the check saw it
  CHECK(c.excerpt_lines >= min_excerpt_lines);
}

}  // namespace

TEST_CASE("walkthroughs: the quote rule catches a number or an excerpt line that is not in the cited file") {
  CHECK(has_number("took 12.345us", "12.345"));
  CHECK_FALSE(has_number("took 112.345us", "12.345"));
  CHECK_FALSE(has_number("took 12.3456us", "12.345"));
  CHECK(has_number("PyTorch 2.11.0+cu130", "2.11"));
  CHECK(quoted_prose("see [the run](../docs/h200-runs/x-2.5.txt) and `docs/a/b-1.5.txt`: 3.25") ==
        "see [the run] and  : 3.25");
  CHECK(quoted_prose("(arithmetic: 1.5 + 2.25 = 3.75) us").find("3.75") == std::string::npos);
  // "…" leaves columns out: the pieces must be in one line, in order.
  const std::string table = "  ts::mm    34.24%   77.019us   5.760us   3\n  ts::add   4.21%   9.468us   3.295us   3\n";
  CHECK(ts::testing::excerpt_in(table, "  ts::mm    34.24%  \u2026  5.760us   3"));
  CHECK_FALSE(ts::testing::excerpt_in(table, "  ts::mm  \u2026  3.295us"));  // two lines' pieces
  CHECK_FALSE(ts::testing::excerpt_in(table, "  ts::mm    34.24%  \u2026  3.295us   3"));
  CHECK_FALSE(ts::testing::excerpt_in(table, "5.760us  \u2026  34.24%"));
  CHECK_FALSE(ts::testing::excerpt_in(table, "  ts::mm    34.24%   77.019us   5.760us   4"));
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ts_walkthrough_rule";
  std::filesystem::create_directories(dir);
  const std::string page = std::filesystem::relative(dir / "page.md", TS_SOURCE_DIR).string();
  {
    std::ofstream(dir / "page.md") << "# A page\n\n<!-- from docs/pytorch-reference/README.md -->\n"
                                      "PyTorch 2.11 printed 9.876 here.\n\n```\nnot in the file\n```\n\n"
                                      "## Next\n\nUncited 1.25.\n";
  }
  const PageCheck c = check_page(page);
  REQUIRE(c.failures.size() == 3);
  CHECK(c.failures[0].find("9.876 is not in docs/pytorch-reference/README.md") != std::string::npos);
  CHECK(c.failures[1].find("excerpt line not in") != std::string::npos);
  CHECK(c.failures[2].find("1.25 has no <!-- from") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("walkthroughs: every number and excerpt of tutorials 00-03 and 06, the debugging page, the trace cheat sheet and the words page is in the file it cites") {
  require_page("tutorials/00_tensors_and_views.md", 5, 20);
  require_page("tutorials/01_matmul_add.md", 40, 50);
  require_page("tutorials/01_matmul_add_trace.md", 45, 85);
  require_page("tutorials/01_matmul_add_fusion.md", 40, 65);
  require_page("tutorials/02_linear.md", 20, 40);
  require_page("tutorials/03_mlp.md", 65, 60);
  require_page("tutorials/03_mlp_kernels.md", 45, 30);
  require_page("tutorials/06_cuda_graphs.md", 25, 50);
  require_page("tutorials/debugging_on_a_gpu.md", 5, 40);
  require_page("tutorials/reading_a_trace.md", 60, 12);  // the trace patterns, then the table-side ones
  require_page("tutorials/words_and_kernel_names.md", 0, 7);  // kernel names only: no measured numbers
}

// ---- the kernel count: tutorial::check_kernel_count --------------------------------------------

namespace {

using ts::testing::SyntheticEvents;
using Verdict = tutorial::KernelCount::Verdict;

// One recorded step of tutorial 01 on a GPU: ts::mm (cuBLAS) and ts::add (ours), each a kernel;
// `gemm_kernels` and `add_kernels` say how many each launched.
SyntheticEvents one_step(int gemm_kernels, int add_kernels) {
  SyntheticEvents s(/*use_cuda=*/true);
  s.rec.device_activity.source = "cupti";
  s.step("ProfilerStep#2", 0, 100'000, -1);
  const int mm = s.op("ts::mm", 1'000, 20'000, 0);
  s.at(mm).variant = "mm/cuda/cublas";
  const int add = s.op("ts::add", 30'000, 40'000, 0);
  s.at(add).variant = "add/cuda/rows";
  static const char* gemm_names[] = {"nvjet_sm90_tst_64x8_64x16_1x4_h_bz_splitK_NNT",
                                     "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>"};
  for (int i = 0; i < gemm_kernels; ++i) s.kernel(gemm_names[i % 2], 50'000 + i * 1'000, 50'500 + i * 1'000, mm);
  for (int i = 0; i < add_kernels; ++i) s.kernel("void ts::elementwise_binary_rows_kernel", 60'000, 61'000, add);
  return s;
}

}  // namespace

TEST_CASE("walkthroughs: the kernel count is strict on our kernels and explains a library's split-K plan") {
  SUBCASE("as expected") {
    const tutorial::KernelCount k = tutorial::check_kernel_count(one_step(1, 1).rec, 2, 1, "step", true);
    CHECK(k.verdict == Verdict::ok);
    CHECK(k.passed());
    CHECK(k.report == "kernels: expected 2 per step, observed 2 over 1 step (2.0 per step): OK");
  }
  SUBCASE("cuBLASLt split the GEMM in two: explained, not an error") {
    const tutorial::KernelCount k = tutorial::check_kernel_count(one_step(2, 1).rec, 2, 1, "step", true);
    INFO(k.report);
    CHECK(k.verdict == Verdict::library_choice);
    CHECK(k.passed());
    CHECK(k.library == 2);
    CHECK(k.library_calls == 1);
    CHECK(k.report.find("OK, explained") != std::string::npos);
    CHECK(k.report.find("picked\n  a different algorithm") != std::string::npos);
    CHECK(k.report.find("splitKreduce_kernel") != std::string::npos);  // which kernels appeared
    CHECK(k.report.find("MISMATCH") == std::string::npos);
  }
  SUBCASE("one of our kernels too many: a mismatch, even beside a split GEMM") {
    for (int gemm : {1, 2}) {
      const tutorial::KernelCount k = tutorial::check_kernel_count(one_step(gemm, 2).rec, 2, 1, "step", true);
      INFO(k.report);
      CHECK(k.verdict == Verdict::mismatch);
      CHECK_FALSE(k.passed());
      CHECK(k.report.find("MISMATCH") != std::string::npos);
      CHECK(k.report.find("elementwise_binary_rows_kernel") != std::string::npos);
    }
  }
  SUBCASE("one of our kernels missing, or a GEMM that launched nothing: mismatches") {
    CHECK(tutorial::check_kernel_count(one_step(1, 0).rec, 2, 1, "step", true).verdict == Verdict::mismatch);
    CHECK(tutorial::check_kernel_count(one_step(0, 1).rec, 2, 1, "step", true).verdict == Verdict::mismatch);
    CHECK(tutorial::check_kernel_count(one_step(1, 1).rec, 3, 1, "step", true).verdict == Verdict::mismatch);
  }
  SUBCASE("CUPTI held by another tool: the CUDA-event fallback is not counted, and the run passes saying so") {
    SyntheticEvents s = one_step(0, 0);
    s.rec.device_activity.source = "cuda_events";
    s.rec.device_activity.error = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    s.kernel("ts::mm [CUDA events]", 50'000, 60'000, 1);  // what the fallback records: one per op
    const tutorial::KernelCount k = tutorial::check_kernel_count(s.rec, 2, 1, "step", true);
    CHECK(k.verdict == Verdict::not_checked);
    CHECK(k.passed());
    CHECK(k.report.find("kernels: NOT CHECKED in this run: CUPTI did not record "
                        "(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)") == 0);
    CHECK(k.report.find("ncu, cuda-gdb") != std::string::npos);
  }
  SUBCASE("nothing to count: a CPU run, or CUDA activity not asked for") {
    const tutorial::KernelCount cpu = tutorial::check_kernel_count(SyntheticEvents(false).rec, 5, 3, "forward", false);
    CHECK(cpu.verdict == Verdict::not_recorded);
    CHECK(cpu.report == "kernels: none recorded (CPU run); on a GPU this forward launches 5");
    const tutorial::KernelCount off = tutorial::check_kernel_count(SyntheticEvents(false).rec, 5, 3, "forward", true);
    CHECK(off.verdict == Verdict::not_recorded);
    CHECK(off.report.find("--activities cpu") != std::string::npos);
    CHECK(off.passed());
  }
}
