// tests/test_tutorials.cpp: tutorials are tests: each runs at its default (small) size and
// returns non-zero when its own validation fails. Also: the README's before-and-after loop
// replayed as it is written, ts_trace_diff on the CPU traces it gives, and tutorials/README.md
// against the tutorials, their paths and their walk-throughs.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "ops/registry.h"
#include "tensor/cuda_device.h"

#ifndef TS_TUTORIAL_DIR
#error "TS_TUTORIAL_DIR must name the folder of the built tutorials (set in CMakeLists.txt)"
#endif

namespace {

// Runs a tutorial on the cpu with its output discarded; returns its exit code (-1 if it could not run).
// Artifacts go under the system's temporary folder, not the source tree.
int run_tutorial(const std::string& name, const std::string& args = "") {
  const std::string command = std::string("\"") + TS_TUTORIAL_DIR + "/" + name + "\" --device cpu " + args +
                              " > /dev/null 2>&1";
  const int status = std::system(command.c_str());
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Runs a shell command; returns {exit code, stdout and stderr} (-1: it did not exit by itself).
std::pair<int, std::string> run_shell(const std::string& command) {
  std::string output;
  std::FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, output};
  char chunk[4096];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) output.append(chunk, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// Runs a tutorial with its output captured (stdout and stderr); returns {exit code, output}.
std::pair<int, std::string> run_captured(const std::string& name, const std::string& args) {
  return run_shell(std::string("\"") + TS_TUTORIAL_DIR + "/" + name + "\" " + args);
}

}  // namespace

TEST_CASE("tutorials: 00_tensors_and_views runs and passes its check") {
  CHECK(run_tutorial("00_tensors_and_views", "--out-dir /tmp/ts_tutorial_test/00_tensors_and_views") == 0);
}

TEST_CASE("tutorials: 02_linear runs eager and with the pre-transposed weight, and passes its check") {
  const std::string out = " --out-dir /tmp/ts_tutorial_test/02_linear";
  CHECK(run_tutorial("02_linear", "--tokens 64" + out) == 0);
  CHECK(run_tutorial("02_linear", "--tokens 64 --fused --dtype f32" + out) == 0);
}

TEST_CASE("tutorials: 03_mlp runs every path at a small size and passes its check") {
  for (const char* path : {"eager", "fused", "merged", "epilogue"}) {
    INFO(path);
    CHECK(run_tutorial("03_mlp", std::string("--batch 2 --seq 8 --dim 64 --hidden 96 --path ") + path +
                                     " --out-dir /tmp/ts_tutorial_test/03_mlp") == 0);
  }
}

TEST_CASE("tutorials: 04_attention runs every path at a small size on the cpu and passes its check") {
  const std::string small = " --batch 1 --heads 2 --seq 33 --head-dim 16 --out-dir /tmp/ts_tutorial_test/04_attention";
  for (const char* path : {"naive", "inplace", "math", "flash_v1", "flash_v2", "flash_v3"})
    for (const char* dtype : {"bf16", "f32"})
      for (const char* causal : {"--causal", "--no-causal"}) {
        INFO(path, " ", dtype, " ", causal);
        CHECK(run_tutorial("04_attention", std::string("--path ") + path + " --dtype " + dtype + " " + causal + small) ==
              0);
      }
}

TEST_CASE("tutorials: 04_attention says what to expect first, and on a cpu why a fused path runs math instead") {
  const std::string small = " --batch 1 --heads 2 --seq 17 --head-dim 8 --out-dir /tmp/ts_tutorial_test/04_attention";
  const auto [status, out] = run_captured("04_attention", "--device cpu --path naive" + small);
  INFO(out);
  CHECK(status == 0);
  CHECK(out.find("Guess first") < out.find("Self CPU %"));  // expectations before the table
  CHECK(out.find("5 kernels per forward on a GPU and 1 copy") != std::string::npos);
  CHECK(out.find("ts::masked_fill is out of place") != std::string::npos);
  CHECK(out.find("kernels: none recorded (CPU run)") != std::string::npos);
  CHECK(out.find("check of 4 output rows against a float64 reference: OK") != std::string::npos);
  const auto [status2, out2] =
      run_captured("04_attention", "--device cpu --path flash_v2 --batch 1 --heads 2 --seq 17 --head-dim 64"
                                   " --out-dir /tmp/ts_tutorial_test/04_attention");
  INFO(out2);
  CHECK(status2 == 0);
  CHECK(out2.find("The flash_v2 path cannot run on the CPU: its rung, scaled_dot_product_attention/cuda/flash_v2, is a CUDA kernel") != std::string::npos);
  // The rung's own reason; a build without the CUDA toolkit has no such rung and says so.
  const std::string rung_says = ts::cuda::built_with_cuda() ? "runs on cuda, q is on cpu" : "is not in this build";
  CHECK(out2.find(rung_says) != std::string::npos);
  CHECK(out2.find("ts::scaled_dot_product_attention") != std::string::npos);
  CHECK(out2.find("12 kernels per forward on a GPU") != std::string::npos);  // the math path's expectation
  const auto [status4, out4] =
      run_captured("04_attention", "--device cpu --path flash_v3 --batch 1 --heads 2 --seq 17 --head-dim 64"
                                   " --out-dir /tmp/ts_tutorial_test/04_attention");
  INFO(out4);
  CHECK(status4 == 0);
  CHECK(out4.find("The flash_v3 path cannot run on the CPU: its rung, scaled_dot_product_attention/cuda/flash_v3, is a CUDA kernel") != std::string::npos);
  CHECK(out4.find(ts::cuda::built_with_cuda() ? "(the rung says: sdpa flash_v3: runs on cuda, q is on cpu)"
                                              : "(the rung says: scaled_dot_product_attention/cuda/flash_v3 is not in this build")
        != std::string::npos);
  CHECK(out4.find("12 kernels per forward on a GPU") != std::string::npos);
  CHECK(out4.find("check of 4 output rows against a float64 reference: OK") != std::string::npos);
  // An unknown path is refused by the flag parser.
  const auto [status3, out3] = run_captured("04_attention", "--device cpu --path bogus" + small);
  CHECK(status3 != 0);
}

TEST_CASE("profiler cuda: tutorial 04 counts every path's kernels on the gpu at a small size") {
  if (!ts::cuda::is_available()) {
    MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
    return;
  }
  const std::string small = " --device cuda --batch 2 --heads 4 --seq 200 --warmup 1"
                            " --out-dir /tmp/ts_tutorial_test/04_attention_cuda";
  // A fused path runs where cuda:0 (the tutorial's GPU) has what its rung row needs.
  auto gpu_refusal = [](const char* path) {
    const char* name = ts::nn::attention_variant_name(ts::nn::parse_attention_path(path));
    std::string why;
    return name == nullptr || ts::gpu_meets_rung(name, ts::kCUDA, &why) ? std::string() : why;
  };
  for (const char* path : {"naive", "inplace", "math", "flash_v1", "flash_v2", "flash_v3"}) {
    if (const std::string why = gpu_refusal(path); !why.empty()) {
      // The lesson says why this GPU cannot run the path and runs the best fused rung it has.
      MESSAGE(std::string(path), " replaced on this GPU: ", why);
      const auto [status, out] = run_captured("04_attention", std::string("--path ") + path + " --head-dim 64" + small);
      INFO(out);
      CHECK(status == 0);
      CHECK(out.find(why) != std::string::npos);
      CHECK(out.find("instead, the best fused rung this GPU runs") != std::string::npos);
      CHECK(out.find("MISMATCH") == std::string::npos);
      continue;
    }
    const auto [status, out] = run_captured("04_attention", std::string("--path ") + path + " --head-dim 64" + small);
    INFO(path, "\n", out);
    CHECK(status == 0);
    CHECK(out.find("kernels: expected") != std::string::npos);
    CHECK(out.find("MISMATCH") == std::string::npos);
  }
  // A head dim the rung lacks is the user's to fix: refused with the reason. (A path this GPU
  // cannot run at all was replaced above, and the replacement decides what it takes.)
  for (const char* path : {"flash_v2", "flash_v3"}) {
    if (!gpu_refusal(path).empty()) continue;
    const auto [status, out] = run_captured("04_attention", std::string("--path ") + path + " --head-dim 80" + small);
    INFO(out);
    CHECK(status != 0);
    CHECK(out.find("head dim 80 is not supported") != std::string::npos);
  }
}

TEST_CASE("tutorials: 06_cuda_graphs runs eagerly on the cpu and says why the graph mode cannot") {
  const std::string out_dir = " --out-dir /tmp/ts_tutorial_test/06_cuda_graphs";
  CHECK(run_tutorial("06_cuda_graphs", out_dir) == 0);
  CHECK(run_tutorial("06_cuda_graphs", "--workload mlp --batch 1" + out_dir) == 0);
  CHECK(run_tutorial("06_cuda_graphs", "--workload attention --batch 1" + out_dir) == 0);
  const auto [status, out] = run_captured("06_cuda_graphs", "--device cpu" + out_dir);
  INFO(out);
  CHECK(status == 0);
  CHECK(out.find("The graph mode cannot run here: ") < out.find("This lesson needs an NVIDIA GPU"));
  CHECK(out.find("---- eager ----") < out.find("Guess first"));
  CHECK(out.find("Guess first") < out.find("Self CPU %"));  // expectations before the table
  CHECK(out.find("kernels: none recorded (CPU run); on a GPU this step launches 2") != std::string::npos);
  CHECK(out.find("---- replayed from the graph ----") == std::string::npos);
  CHECK(out.find("all checks passed") != std::string::npos);
  const auto [status2, out2] = run_captured("06_cuda_graphs", "--device cpu --mode graph" + out_dir);
  INFO(out2);
  CHECK(status2 == 0);
  CHECK(out2.find("The graph mode cannot run here: ") != std::string::npos);
  CHECK(out2.find("---- eager ----") == std::string::npos);
  // A flag of another workload is refused with what it is for.
  const auto [status3, out3] = run_captured("06_cuda_graphs", "--device cpu --workload mlp --size 5" + out_dir);
  INFO(out3);
  CHECK(status3 == 1);
  CHECK(out3.find("--size is the step's N") != std::string::npos);
}

TEST_CASE("profiler cuda: tutorial 06 replays each workload bit for bit and counts the eager step's kernels") {
  if (!ts::cuda::is_available()) {
    MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
    return;
  }
  const std::string small = " --device cuda --timing-batches 2 --out-dir /tmp/ts_tutorial_test/06_cuda_graphs_cuda";
  for (const char* workload : {"step", "mlp", "attention"}) {
    const std::string args = std::string("--workload ") + workload + (workload == std::string("step") ? "" : " --batch 1");
    const auto [status, out] = run_captured("06_cuda_graphs", args + small);
    INFO(workload, "\n", out);
    CHECK(status == 0);
    CHECK(out.find("OK (bit for bit)") != std::string::npos);
    CHECK(out.find("---- replayed from the graph ----") != std::string::npos);
    CHECK(out.find("eager beside replayed") != std::string::npos);
    CHECK(out.find("reading a cuda tensor on the host") != std::string::npos);
    CHECK(out.find("kernels: expected") != std::string::npos);
    CHECK(out.find("all checks passed") != std::string::npos);
  }
}

// ---- the README's before-and-after loop, and ts_trace_diff on CPU traces ------------------------

#ifdef TS_SOURCE_DIR
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// The build folder: the tutorials' folder's parent, where the tools are.
fs::path build_dir() { return fs::path(TS_TUTORIAL_DIR).parent_path(); }


// README.md's section "## Edit a kernel, profile again", up to the next "## ".
std::string readme_section() {
  const std::string readme = read_text(fs::path(TS_SOURCE_DIR) / "README.md");
  const size_t start = readme.find("## Edit a kernel, profile again");
  REQUIRE(start != std::string::npos);
  const size_t end = readme.find("\n## ", start + 1);
  return readme.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// A scratch folder, removed when the test ends: the runs write traces/ under it, as they would
// under a learner's checkout.
struct Scratch {
  fs::path path = fs::temp_directory_path() / ("ts_tutorials_scratch_" + std::to_string(getpid()));
  Scratch() { fs::create_directories(path); }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("tutorials: the README's before-and-after loop runs as written, and the diff names both runs and the ops") {
  const std::string section = readme_section();
  // The code block that holds the loop: every "$ " line of it, in order.
  const size_t tag = section.find("--tag before");
  REQUIRE(tag != std::string::npos);
  const size_t open = section.rfind("```", tag), close = section.find("```", tag);
  REQUIRE(open != std::string::npos);
  REQUIRE(close != std::string::npos);
  std::vector<std::string> commands;
  for (const std::string& line : lines_of(section.substr(open, close - open)))
    if (line.rfind("$ ", 0) == 0) commands.push_back(line.substr(2));
  REQUIRE(commands.size() == 4);  // before, rebuild, after, diff
  CHECK(commands[0].find("--tag before") != std::string::npos);
  CHECK(commands[1].rfind("cmake --build build/dev", 0) == 0);
  CHECK(commands[2].find("--tag after") != std::string::npos);
  CHECK(commands[3].rfind("./build/dev/ts_trace_diff ", 0) == 0);

  // Replayed in a scratch folder with this build's binaries: the runs on the CPU (the only flag
  // added), the rebuild left out (the kernel is not edited here: the loop's commands are what is
  // tested, not the edit).
  const Scratch scratch;
  std::vector<std::pair<int, std::string>> results;
  for (size_t i = 0; i < commands.size(); ++i) {
    if (i == 1) continue;
    const std::string prefix = "./build/dev/";
    REQUIRE(commands[i].rfind(prefix, 0) == 0);
    const size_t space = commands[i].find(' ');
    const fs::path program = build_dir() / commands[i].substr(prefix.size(), space - prefix.size());
    const std::string command = "cd \"" + scratch.path.string() + "\" && \"" + program.string() + "\"" +
                                commands[i].substr(space) + (i == 3 ? "" : " --device cpu");
    results.push_back(run_shell(command));
    INFO(command, "\n", results.back().second);
    CHECK(results.back().first == 0);
  }
  // The two runs kept apart, each saying where its files went.
  const std::regex name(R"(traces/03_mlp/\S+_before\.json)");
  std::smatch m;
  const std::string& diff_command = commands[3];
  REQUIRE(std::regex_search(diff_command, m, name));
  const std::string before = m.str(), after = std::regex_replace(before, std::regex("_before"), "_after");
  CHECK(diff_command.find(after) != std::string::npos);
  CHECK(results[0].second.find("wrote the trace " + before) != std::string::npos);
  CHECK(results[1].second.find("wrote the trace " + after) != std::string::npos);
  CHECK(fs::exists(scratch.path / before));
  CHECK(fs::exists(scratch.path / after));
  // The diff names both files and the fused path's ops, without CUDA columns on a CPU trace.
  const std::string& diff = results[2].second;
  INFO(diff);
  CHECK(diff.find("  before: " + before + " (ProfilerStep #2..#4, 3 steps)") != std::string::npos);
  CHECK(diff.find("  after:  " + after + " (ProfilerStep #2..#4, 3 steps)") != std::string::npos);
  for (const char* op : {"ts::geglu", "ts::mm", "ts::linear", "mlp_fwd", "ProfilerStep*"})
    CHECK(std::regex_search(diff, std::regex(std::string(R"(\s(cpu_op|user_annotation)\s+)") +
                                             std::regex_replace(op, std::regex(R"([*])"), R"(\*)") + "\n")));
  CHECK(diff.find("no Self CUDA columns: neither trace has device activity") != std::string::npos);
  CHECK(diff.find("Self CUDA time total") == std::string::npos);
}

TEST_CASE("tutorials: the README names a line of a kernel to edit, and that line says what the README quotes") {
  // "line 36 of `ops/elementwise/gelu_math.h`, `return ...;`": the file's line 36 holds the quote.
  const std::string section = readme_section();
  const std::regex ref(R"(line (\d+)\s+of\s+`([^`]+)`,\s+`([^`]+)`)");
  int checked = 0;
  for (auto it = std::sregex_iterator(section.begin(), section.end(), ref); it != std::sregex_iterator(); ++it) {
    const int line = std::stoi((*it)[1]);
    const std::string file = (*it)[2], quote = (*it)[3];
    const std::vector<std::string> lines = lines_of(read_text(fs::path(TS_SOURCE_DIR) / file));
    INFO(file, " line ", line, ": README quotes `", quote, "`");
    REQUIRE(line >= 1);
    REQUIRE(static_cast<size_t>(line) <= lines.size());
    CHECK(lines[static_cast<size_t>(line) - 1].find(quote) != std::string::npos);
    ++checked;
  }
  CHECK(checked >= 2);  // the GPU's line and the CPU's
}

TEST_CASE("tutorials: ts_trace_diff on two CPU traces leaves out the Self CUDA columns and says so") {
  const Scratch scratch;
  const std::string out = (scratch.path / "02").string();
  for (const char* tag : {"one", "two"})
    REQUIRE(run_tutorial("02_linear", std::string("--tokens 16 --in 8 --out 8 --dtype f32 --tag ") + tag +
                                          " --out-dir " + out) == 0);
  const std::string a = out + "/16x8x8_f32_cold_eager_one.json", b = out + "/16x8x8_f32_cold_eager_two.json";
  for (const char* steps : {"", " --steps"}) {
    const auto [status, output] =
        run_shell("\"" + (build_dir() / "ts_trace_diff").string() + "\" " + a + " " + b + steps);
    INFO(steps, "\n", output);
    CHECK(status == 0);
    CHECK(output.find("Self CUDA time total") == std::string::npos);
    const size_t header = output.find("\n  calls   calls");
    REQUIRE(header != std::string::npos);
    CHECK(output.substr(header, output.find('\n', header + 1) - header).find("Self CUDA") == std::string::npos);
    CHECK(output.find("no Self CUDA columns: neither trace has device activity (no kernel, no copy, no CUDA call)") !=
          std::string::npos);
    CHECK(output.find("Self CPU time total:") != std::string::npos);
    // Every row: calls before and after, Self CPU before, after, change and ratio, the kind and the name.
    const std::regex row(R"(^\s*[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+-?[\d.]+\s+\S+\s+(cpu_op|user_annotation)\s+(\S+)$)");
    int rows = 0;
    bool addmm = false;
    for (const std::string& line : lines_of(output)) {
      std::smatch m;
      if (!std::regex_match(line, m, row)) continue;
      ++rows;
      addmm = addmm || m[2] == "ts::addmm";
    }
    CHECK(rows >= 4);  // ProfilerStep*, linear_fwd, ts::linear, ts::t, ts::addmm
    CHECK(addmm);
  }
  // A GPU trace keeps every column: the committed H200 diff is what the tool prints today.
  const fs::path committed = fs::path(TS_SOURCE_DIR) / "docs/h200-runs/03_mlp/trace_diff_eager_vs_fused.txt";
  const std::vector<std::string> want = lines_of(read_text(committed));
  REQUIRE(!want.empty());
  REQUIRE(want[0].rfind("$ ./build/dev/ts_trace_diff ", 0) == 0);
  const std::string args = want[0].substr(std::string("$ ./build/dev/ts_trace_diff ").size());
  const auto [status, output] =
      run_shell("cd \"" TS_SOURCE_DIR "\" && \"" + (build_dir() / "ts_trace_diff").string() + "\" " + args);
  CHECK(status == 0);
  CHECK(lines_of(output) == std::vector<std::string>(want.begin() + 1, want.end()));
}

TEST_CASE("tutorials: tutorials/README.md lists every tutorial, every path and lesson, and every walk-through") {
  const fs::path dir = fs::path(TS_SOURCE_DIR) / "tutorials";
  const std::string readme = read_text(dir / "README.md");
  int tutorials = 0, walkthroughs = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string file = e.path().filename().string();
    if (e.path().extension() == ".md" && file != "README.md") {
      INFO("tutorials/README.md does not link ", file);
      CHECK(readme.find("](" + file + ")") != std::string::npos);
      ++walkthroughs;
    }
    if (e.path().extension() != ".cpp" || !std::regex_match(file, std::regex(R"(\d\d_\w+\.cpp)"))) continue;
    ++tutorials;
    const std::string tutorial = e.path().stem().string();
    // Its row in the table of lessons: "| `NAME` | ...".
    const size_t row = readme.find("| `" + tutorial + "` |");
    INFO(tutorial);
    REQUIRE(row != std::string::npos);
    const std::string line = readme.substr(row, readme.find('\n', row) - row);
    // Every value of its --path or --lesson, as --help lists them (eager|fused|...), is in the row.
    const auto [status, help] = run_captured(tutorial, "--help");
    REQUIRE(status == 0);
    std::smatch m;
    if (std::regex_search(help, m, std::regex(R"(  (--path|--lesson) (\S+))"))) {
      std::stringstream choices(m[2].str());
      std::string choice;
      while (std::getline(choices, choice, '|')) {
        INFO(tutorial, ": tutorials/README.md's row lacks `", m[1].str(), " ", choice, "`");
        CHECK(line.find("`" + m[1].str() + " " + choice + "`") != std::string::npos);
      }
    }
  }
  CHECK(tutorials == 7);
  CHECK(walkthroughs >= 7);
}

// README.md's first-build paragraph: every time and size it gives ("598.8 s", "35 MB") is in the
// summary of one of the runs it names, as those files print it ("598.8s", "35 MB").
TEST_CASE("tutorials: the README's first-build times and sizes are the committed runs'") {
  const std::string readme = read_text(fs::path(TS_SOURCE_DIR) / "README.md");
  const size_t from = readme.find("How long the first time takes");
  REQUIRE(from != std::string::npos);
  const std::string paragraph = readme.substr(from, readme.find("\n\n", from) - from);
  std::string runs;
  for (const char* file : {"docs/cpu-runs/first-build/after.txt", "docs/h200-runs/first-build/after.txt",
                           "docs/cpu-runs/first-build/tutorial-binary-sections.txt"}) {
    const bool named = paragraph.find(std::string("`") + file + "`") != std::string::npos ||
                       paragraph.find(fs::path(file).filename().string()) != std::string::npos;
    CHECK_MESSAGE(named, file, " is not named");
    // The summary above the stamped output only: stamps every tenth of a second would match anything.
    const std::string text = read_text(fs::path(TS_SOURCE_DIR) / file);
    runs += text.substr(0, text.find("## make tutorials, each line stamped"));
  }
  static const std::regex quantity(R"((\d+(?:\.\d+)?)\s*(s|MB)\b)");
  int quoted = 0;
  for (std::sregex_iterator it(paragraph.begin(), paragraph.end(), quantity), end; it != end; ++it, ++quoted) {
    const std::string number = (*it)[1], unit = (*it)[2];
    const bool found = unit == "MB" ? runs.find(number + " MB") != std::string::npos
                                    : runs.find(number + "s") != std::string::npos || runs.find(number + " s") != std::string::npos;
    CHECK_MESSAGE(found, number, " ", unit, " is not in the runs the paragraph names");
  }
  CHECK(quoted >= 10);
}
#endif  // TS_SOURCE_DIR
