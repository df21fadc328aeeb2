// tests/test_ladder.cpp: ts_ladder (bench/ts_ladder.cpp): its comparison catches a wrong rung, --list
// prints the whole registry, it refuses cuda without a GPU, it refuses a wrong argument before measuring
// anything, and the op READMEs quote its committed runs.
// (ctest also runs it on the CPU: ladder_cpu_mm, ladder_cpu_add, ladder_cpu_all.)
#include <doctest/doctest.h>

#include "tests/support/run_command.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "bench/ladder_compare.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "tensor/cuda_device.h"

using ts::DType;
using ts::Tensor;
using ts::ladder::Comparison;
using ts::ladder::Numerics;

namespace {

using ts::testing::Run;
using ts::testing::run;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A reference and a rung's output computed by two different rungs of mm (odd sizes, f32).
struct TwoRungs {
  std::vector<double> want, got;
  ts::Dims shape;
  TwoRungs() {
    ts::manual_seed(11);
    const Tensor a = ts::randn({37, 53}), b = ts::randn({53, 29});
    {
      ts::VariantOverride use("mm/cpu/ref");
      const Tensor out = ts::mm(a, b);
      want = out.to_vector<double>();
      shape = out.shape();
    }
    ts::VariantOverride use("mm/cpu/openblas");
    got = ts::mm(a, b).to_vector<double>();
  }
};

}  // namespace

TEST_CASE("ladder: two correct rungs agree, and one corrupted element is caught and named") {
  TwoRungs r;
  const double tol = ts::ladder::tolerance(DType::f32, Numerics::accumulates);
  const Comparison same = ts::ladder::compare(r.got, r.want, tol);
  CHECK(same.ok);
  CHECK(same.rel_err < 1e-6);
  CHECK(same.mismatched_nonfinite == 0);

  // A wrong rung: one element off by 1% of the output's norm.
  double norm = 0;
  for (double w : r.want) norm += w * w;
  norm = std::sqrt(norm);
  std::vector<double> bad = r.got;
  const size_t k = 29 * 17 + 5;  // [17, 5]
  bad[k] += 0.01 * norm;
  const Comparison c = ts::ladder::compare(bad, r.want, tol);
  CHECK_FALSE(c.ok);
  CHECK(c.worst == static_cast<int64_t>(k));
  CHECK(c.rel_err == doctest::Approx(0.01).epsilon(0.01));
  CHECK(c.max_abs == doctest::Approx(0.01 * norm).epsilon(0.01));
  CHECK(c.worst_got == bad[k]);
  CHECK(c.worst_want == r.want[k]);
  const std::string text = ts::ladder::describe_failure(c, tol, r.shape);
  CHECK(text.find("worst [17, 5]") != std::string::npos);
  CHECK(text.find("rel err 1.00e-02") != std::string::npos);
}

TEST_CASE("ladder: an element the rung never wrote (still the NaN poison) fails, and equal NaN and inf pass") {
  TwoRungs r;
  const double tol = ts::ladder::tolerance(DType::f32, Numerics::accumulates);
  constexpr double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // A rung that writes only the first half of its output leaves the poison in the rest.
  std::vector<double> half = r.got;
  for (size_t i = half.size() / 2; i < half.size(); ++i) half[i] = nan;
  const Comparison c = ts::ladder::compare(half, r.want, tol);
  CHECK_FALSE(c.ok);
  CHECK(c.mismatched_nonfinite == static_cast<int64_t>(half.size() - half.size() / 2));
  CHECK(c.worst == static_cast<int64_t>(half.size() / 2));  // the first unwritten element
  CHECK(ts::ladder::describe_failure(c, tol, r.shape).find("NaN/inf") != std::string::npos);

  // NaN where the reference has NaN, the same infinity: fine. The other infinity is not.
  const std::vector<double> want{1, nan, -inf, 4}, same{1, nan, -inf, 4}, flipped{1, nan, inf, 4};
  CHECK(ts::ladder::compare(same, want, 0).ok);
  CHECK_FALSE(ts::ladder::compare(flipped, want, 1).ok);
  CHECK_FALSE(ts::ladder::compare({1, 2, 3}, want, 1).ok);  // a different element count
}

TEST_CASE("ladder: tolerances by dtype: one bf16 rounding passes, a 2% error fails, and indices must match exactly") {
  CHECK(ts::ladder::tolerance(DType::f32, Numerics::exact) == 1e-5);
  CHECK(ts::ladder::tolerance(DType::f32, Numerics::accumulates) == 1e-4);
  CHECK(ts::ladder::tolerance(DType::bf16, Numerics::accumulates) == 1e-2);
  CHECK(ts::ladder::tolerance(DType::f16, Numerics::exact) == 5e-3);
  CHECK(ts::ladder::tolerance(DType::i64, Numerics::exact) == 0);

  TwoRungs r;
  std::vector<double> rounded, off;
  for (double w : r.want) {
    rounded.push_back(static_cast<float>(ts::bf16(static_cast<float>(w))));
    off.push_back(w * 1.02);
  }
  const double bf16 = ts::ladder::tolerance(DType::bf16, Numerics::exact);
  CHECK(ts::ladder::compare(rounded, r.want, bf16).ok);
  CHECK_FALSE(ts::ladder::compare(off, r.want, bf16).ok);
  CHECK_FALSE(ts::ladder::compare({0, 1, 3}, {0, 1, 2}, 0).ok);  // argmax indices
  CHECK(ts::ladder::compare({0, 1, 2}, {0, 1, 2}, 0).ok);
}

#ifdef TS_LADDER
TEST_CASE("ladder: --list prints every registered variant exactly once") {
  const Run r = run(std::string(TS_LADDER) + " --list");
  REQUIRE(r.status == 0);
  std::map<std::string, int> seen;
  size_t rows = 0;
  const std::vector<std::string> lines = lines_of(r.output);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    // Rung rows: "  <rung>  <name>  <device>  <needs>  <summary>", then "        <source file>".
    const std::vector<std::string> w = words_of(line);
    if (line.rfind("  ", 0) != 0 || w.size() < 4 || w[0].find_first_not_of("0123456789") != std::string::npos)
      continue;
    ++rows;
    ++seen[w[1]];
    const ts::Variant* v = ts::find_variant(w[1]);
    REQUIRE_MESSAGE(v != nullptr, "not a registered variant: ", line);
    CHECK(w[0] == std::to_string(v->rung));
    CHECK(w[2] == ts::variant_device_name(v->device));
    CHECK(w[3] == ts::gpu_needs_name(v->needs));
    CHECK((w[3] == "-") == (v->device != ts::VariantDevice::cuda));  // every CUDA rung says what it needs
    REQUIRE(i + 1 < lines.size());
    CHECK(lines[i + 1] == std::string("        ") + v->source);  // the file of its code, on the next line
  }
  CHECK(rows == ts::all_variants().size());
  for (const ts::Variant* v : ts::all_variants()) CHECK_MESSAGE(seen[v->name] == 1, v->name);
  // Every op appears, with its problem or the reason it has none.
  for (const ts::OpDef* op : ts::all_ops()) {
    const std::string head = std::string("\n") + op->short_name() + "  ";
    CHECK_MESSAGE(r.output.find(head) != std::string::npos, op->short_name());
  }
}

TEST_CASE("ladder: --device cuda without a GPU exits non-zero with a one-line reason") {
  if (ts::cuda::is_available()) {
    MESSAGE("skipped: this machine has a usable CUDA device");
    return;
  }
  const Run r = run(std::string(TS_LADDER) + " --op mm --device cuda");
  CHECK(r.status != 0);
  CHECK(lines_of(r.output).size() == 1);
  CHECK(r.output.find("no usable CUDA device") != std::string::npos);
}

TEST_CASE("ladder: unknown ops, ops without a problem and bad shapes are refused with a reason") {
  const std::string tool = TS_LADDER;
  Run r = run(tool + " --op nope --device cpu");
  CHECK(r.status == 2);
  CHECK(r.output.find("unknown op 'nope'") != std::string::npos);
  r = run(tool + " --op t --device cpu");
  CHECK(r.status == 2);
  CHECK(r.output.find("no ladder problem") != std::string::npos);
  r = run(tool + " --op mm --device cpu --shape 64,64 --runs 1");
  CHECK(r.status != 0);
  CHECK(r.output.find("--shape takes M,N,K") != std::string::npos);
  r = run(tool + " --all --shape 64");
  CHECK(r.status == 2);
}

// A wrong argument stops ts_ladder before it measures anything: exit 2, one line on stderr that
// names the option, what was given and what it takes, and none of the lines a run prints before
// its tables (the header, "timing:", "ceilings:", the first op's title).
TEST_CASE("ladder: every wrong argument is refused before anything is measured") {
  const std::string tool = TS_LADDER;
  struct Case {
    std::string args;
    std::vector<std::string> says;  // each must be in the message
  };
  const std::vector<Case> cases = {
      {"--op mm --device cpu --shape 64,64", {"mm: --shape takes M,N,K", "got '64,64' (2 numbers)", "3 numbers"}},
      {"--op mm --device cpu --shape 64,0,3", {"mm: --shape '64,0,3'", "'0' is not a positive integer", "M,N,K"}},
      {"--op bmm --device cpu --shape 4x8x8xq", {"bmm: --shape '4x8x8xq'", "'q'", "B,M,N,K"}},
      {"--op mm --device cpu --shape 99999999999999999999,2,2", {"'99999999999999999999'", "below 2^63"}},
      {"--op add --device cpu --shape 1,2,3", {"add: --shape takes N | M,N", "1 or 2 numbers", "got '1,2,3'"}},
      {"--op nope --device cpu", {"--op nope", "unknown op 'nope'", "--list"}},
      {"--op mm/cpu/ref --device cpu", {"--op mm/cpu/ref", "a variant of mm, not an op", "--op mm"}},
      {"--op t --device cpu", {"--op t", "no ladder problem"}},
      {"--op mm --device gpu", {"--device gpu", "expected cpu, cuda or cuda:N"}},
      {"--op mm --device cpu --dtype i64", {"--dtype i64", "expected f32, bf16 or f16"}},
      {"--op mm --device cpu --dtype f8", {"--dtype f8", "expected f32, bf16 or f16"}},
      {"--op mm --device cpu --runs 0", {"--runs 0", "at least 1"}},
      {"--op mm --device cpu --warmup -1", {"--warmup -1", "0 or more"}},
      {"--op mm --device cpu --runs abc", {"--runs", "abc", "--help"}},
      {"--op mm --device cpu --json /nonexistent-dir/ladder.json", {"--json /nonexistent-dir/ladder.json", "cannot write"}},
      {"--all --device cpu --shape 64", {"--shape 64 with --all", "one --op"}},
      {"--op mm --all --device cpu", {"--op mm and --all"}},
      {"--device cpu", {"give --op NAME"}},
  };
  for (const Case& c : cases) {
    const Run r = run(tool + " " + c.args);
    INFO("ts_ladder ", c.args, "\n", r.output);
    CHECK(r.status == 2);
    CHECK(lines_of(r.output).size() == 1);
    CHECK(r.output.rfind("ts_ladder: ", 0) == 0);
    for (const std::string& words : c.says) CHECK_MESSAGE(r.output.find(words) != std::string::npos, words);
    for (const char* measured : {"ceilings:", "timing:", "ts_ladder: cpu,", "% roof", "validated at"})
      CHECK_MESSAGE(r.output.find(measured) == std::string::npos, measured);
  }
  // TS_VARIANT's names too: an unknown one stops the run before the ceilings, not in the first op.
  const Run r = run("TS_VARIANT=mm/cpu/nope " + tool + " --op mm --device cpu --runs 1");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(lines_of(r.output).size() == 1);
  CHECK(r.output.find("TS_VARIANT: unknown variant 'mm/cpu/nope'") != std::string::npos);
  CHECK(r.output.find("ceilings:") == std::string::npos);
}

TEST_CASE("ladder: mm on the cpu: the reference row, OpenBLAS checked and timed, the ceilings above") {
  const Run r = run(std::string(TS_LADDER) + " --op mm --device cpu --shape 65,33,47 --runs 3 --warmup 1");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("ceilings: copy ") != std::string::npos);
  CHECK(r.output.find("mm  cpu f32  65x33x47  FLOPs 2.02e+05") != std::string::npos);
  bool ref = false, blas = false;
  for (const std::string& line : lines_of(r.output)) {
    const std::vector<std::string> w = words_of(line);
    if (w.size() < 3) continue;
    if (w[1] == "mm/cpu/ref") ref = w[2] == "reference" && w.size() == 10;  // timed: n, median, p10..p90, ...
    if (w[1] == "mm/cpu/openblas") {
      blas = w[2] == "ok" && w.size() == 10;
      if (blas) CHECK(std::stod(w[9]) < 1e-4);  // rel err
    }
    CHECK(w[1].find("mm/cuda/") == std::string::npos);  // rungs of another device are not listed
  }
  CHECK(ref);
  CHECK(blas);
}
#endif

#ifdef TS_SOURCE_DIR
// Each op README quotes a committed ts_ladder run: a line naming the file, "From `PATH`:",
// then a fenced block whose every line is a line of that file, in the same order.
TEST_CASE("ladder: every table an op README quotes is in the committed run it names") {
  const auto read = [](const std::string& path) {
    std::ifstream in(std::string(TS_SOURCE_DIR) + "/" + path);
    REQUIRE_MESSAGE(in.good(), "cannot read ", path);
    std::stringstream s;
    s << in.rdbuf();
    return lines_of(s.str());
  };
  // The op folders, from the registry (each rung's source file): a folder with an op that has a
  // ladder problem must quote a committed run of it; one whose ops have none (views) may.
  std::map<std::string, bool> folders;  // folder -> whether some op of it has a ladder problem
  for (const ts::Variant* v : ts::all_variants()) {
    const std::string source = v->source;
    const std::string folder = source.substr(0, source.rfind('/'));
    folders[folder] |= v->op->no_ladder_problem == nullptr;
  }
  CHECK(folders.size() >= 10);
  for (const auto& [folder, has_problem] : folders) {
    const std::string readme_path = folder + "/README.md";
    const std::vector<std::string> readme = read(readme_path);
    int quotes = 0;
    for (size_t i = 0; i + 1 < readme.size(); ++i) {
      const std::string& line = readme[i];
      const size_t open = line.find("From `docs/");
      if (open == std::string::npos || readme[i + 1].rfind("```", 0) != 0) continue;
      const size_t start = open + 6, end = line.find('`', start);
      REQUIRE(end != std::string::npos);
      const std::string source = line.substr(start, end - start);
      const std::vector<std::string> log = read(source);
      size_t at = 0, quoted = 0;
      for (size_t j = i + 2; j < readme.size() && readme[j].rfind("```", 0) != 0; ++j) {
        INFO(readme_path, " quotes ", source, ": ", readme[j]);
        while (at < log.size() && log[at] != readme[j]) ++at;
        CHECK(at < log.size());
        if (at < log.size()) ++at;  // the next quoted line comes later in the file
        ++quoted;
      }
      CHECK(quoted > 0);
      ++quotes;
    }
    if (has_problem) CHECK_MESSAGE(quotes > 0, readme_path, " quotes no committed ts_ladder run");
  }
}

// What a new op needs besides its folder: ts_ladder's problem (or its own word why it has none)
// and its folder's README. Each op's folder is its rungs' (Variant::source).
TEST_CASE("ladder: every registered op has a ladder problem or says why not, and a README in its folder") {
  const Run r = run(std::string(TS_LADDER) + " --list");
  REQUIRE(r.status == 0);
  for (const ts::OpDef* op : ts::all_ops()) {
    const std::string name = op->short_name();
    INFO("op ", name);
    const size_t head = r.output.find("\n" + name + "  ");
    REQUIRE(head != std::string::npos);
    const std::string line = r.output.substr(head + 1, r.output.find('\n', head + 1) - head - 1);
    const std::string no_problem = name + "  no ladder problem: ";
    if (line.rfind(no_problem, 0) == 0) {
      // The op's own reason, never the generic gap.
      REQUIRE(op->no_ladder_problem != nullptr);
      CHECK(line.substr(no_problem.size()) == op->no_ladder_problem);
      CHECK(line.find("no entry in ts_ladder's problem table") == std::string::npos);
    } else {
      CHECK(line.rfind(name + "  --shape ", 0) == 0);  // its problem in kProblems
      CHECK(op->no_ladder_problem == nullptr);        // and no reason for a problem it has
    }
    const std::string source = op->rungs[0].source;
    const std::string readme = source.substr(0, source.rfind('/')) + "/README.md";
    CHECK_MESSAGE(std::ifstream(std::string(TS_SOURCE_DIR) + "/" + readme).good(), "no ", readme);
  }
}
#endif
