// tests/test_tutorial_flags.cpp: the tutorials never abort. A bad flag, a bad value, an
// output folder that cannot be written or a table that cannot be saved each end the
// program with ONE line on stderr ("error: ...") and a non-zero exit code: 2 for a flag
// that does not parse, 1 for everything else. A signal (abort, segfault) or a sanitizer
// report fails the case. Also: --help lists each flag's values once and plainly; --tag
// keeps a run's files beside another's; through a pipe the guess arrives before the
// profile ends, and stderr's lines land among stdout's where they were printed.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/cuda_device.h"

#ifndef TS_TUTORIAL_DIR
#error "TS_TUTORIAL_DIR must name the folder of the built tutorials (set in CMakeLists.txt)"
#endif

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int exit_code = -1;  // -1: killed by a signal (see signal)
  int signal = 0;
  std::string out, err;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scratch folder of this process, removed at exit.
const fs::path& scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("ts_tutorial_flags_" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  static const struct Cleanup {
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup;
  return dir;
}

// Runs `tutorial args` through the shell, capturing stdout, stderr and how it ended.
Outcome run(const std::string& tutorial, const std::string& args) {
  const fs::path out = scratch() / "stdout.txt", err = scratch() / "stderr.txt";
  const std::string command = std::string("\"") + TS_TUTORIAL_DIR + "/" + tutorial + "\" " + args + " > \"" +
                              out.string() + "\" 2> \"" + err.string() + "\"";
  const int status = std::system(command.c_str());
  Outcome o;
  if (status != -1 && WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  if (status != -1 && WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  o.out = read_file(out);
  o.err = read_file(err);
  return o;
}

// "  0.123s | text": a line of a child's output with its arrival time, for a failure's report.
std::string fmt_line(double at, const std::string& text) {
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%8.3fs | ", at);
  return stamp + text;
}

int lines_of(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// The tutorial ended by itself with `code` and exactly one line on stderr that starts
// with "error: " and contains `needle`.
void check_one_line_error(const std::string& tutorial, const std::string& args, int code, const std::string& needle) {
  const Outcome o = run(tutorial, args);
  INFO(tutorial, " ", args, "\nexit ", o.exit_code, " signal ", o.signal, "\nstderr:\n", o.err);
  CHECK(o.signal == 0);
  CHECK(o.exit_code == code);
  CHECK(lines_of(o.err) == 1);
  CHECK(o.err.rfind("error: ", 0) == 0);
  CHECK(o.err.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("tutorial flags: integer flags out of range read well") {
  const std::string range = "is out of range: expected an integer in [1, 16384]";
  check_one_line_error("01_matmul_add", "--size 0", 2, "--size: 0 " + range);
  check_one_line_error("01_matmul_add", "--size 2147483648 --dtype f32 --device cpu", 2, "--size: 2147483648 " + range);
  check_one_line_error("01_matmul_add", "--size 99999999999999999999", 2, "--size: 99999999999999999999 " + range);
  check_one_line_error("01_matmul_add", "--size 64x", 2, "'64x' is not an integer");
  check_one_line_error("01_matmul_add", "--size=-5", 2, "--size: -5 " + range);
  check_one_line_error("01_matmul_add", "--active 0", 2, "--active: 0 is out of range: expected an integer in [1, 10000]");
  check_one_line_error("01_matmul_add", "--warmup=-1", 2, "--warmup: -1 is out of range: expected an integer in [0, 100000]");
  check_one_line_error("01_matmul_add", "--schedule-wait 1e3", 2, "'1e3' is not an integer");
  check_one_line_error("02_linear", "--tokens 0", 2, "--tokens: 0 is out of range");
  check_one_line_error("02_linear", "--in 99999999999999999999", 2, "--in: 99999999999999999999 is out of range");
  check_one_line_error("03_mlp", "--hidden 0", 2, "--hidden: 0 is out of range");
  check_one_line_error("03_mlp", "--batch 1000000", 2, "--batch: 1000000 is out of range");
  check_one_line_error("04_attention", "--seq 0", 2, "--seq: 0 is out of range: expected an integer in [1, 65536]");
  check_one_line_error("04_attention", "--head-dim 99999999999999999999", 2, "--head-dim: 99999999999999999999 is out");
}

TEST_CASE("tutorial flags: unknown flags and values are one line, exit 2") {
  check_one_line_error("00_tensors_and_views", "--bogus", 2, "--bogus");
  check_one_line_error("01_matmul_add", "--dtype f64", 2, "--dtype");
  check_one_line_error("03_mlp", "--path fastest", 2, "--path");
  check_one_line_error("02_linear", "--tokens", 2, "--tokens");
}

TEST_CASE("tutorial flags: bad devices are one line, exit 1") {
  check_one_line_error("00_tensors_and_views", "--device tpu", 1, "unknown device 'tpu'");
  check_one_line_error("01_matmul_add", "--device cuda:-1", 1, "unknown device 'cuda:-1'");
  if (!ts::cuda::is_available()) {
    check_one_line_error("00_tensors_and_views", "--device cuda", 1, "cuda");
    check_one_line_error("02_linear", "--device cuda", 1, "cuda");
  }
}

// What `make tutorials` runs: no --out-dir, so each tutorial writes under traces/<its name>/ of the
// folder it runs in.
TEST_CASE("tutorial flags: without --out-dir every tutorial writes into traces/<tutorial>/ of its folder") {
  const fs::path here = scratch() / "default_out_dir";
  fs::create_directories(here);
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"00_tensors_and_views", ""},
      {"01_matmul_add", " --size 8"},
      {"02_linear", " --tokens 4 --in 8 --out 8"},
      {"03_mlp", " --batch 1 --seq 2 --dim 8 --hidden 8"},
      {"04_attention", " --batch 1 --heads 1 --seq 4 --head-dim 4 --path math"},
      {"05_memory_and_syncs", " --batch 1 --seq 4 --dim 16 --hidden 32 --timing-rows 4"}};
  for (const auto& [tutorial, sizes] : runs) {
    const std::string command = "cd \"" + here.string() + "\" && \"" + TS_TUTORIAL_DIR + "/" + tutorial +
                                "\" --device cpu" + sizes + " --tag default_dir > out.txt 2>&1";
    const int status = std::system(command.c_str());
    INFO(tutorial, " printed:\n", read_file(here / "out.txt"));
    CHECK(status == 0);
    const fs::path folder = here / "traces" / tutorial;
    int tagged = 0;
    if (fs::is_directory(folder))
      for (const auto& entry : fs::directory_iterator(folder))
        if (entry.path().filename().string().find("_default_dir.") != std::string::npos) ++tagged;
    CHECK_MESSAGE(tagged > 0, "no file of this run in ", folder.string());
  }
}

TEST_CASE("tutorial flags: an output folder that cannot be written is one line, exit 1, before any work") {
  const fs::path file = scratch() / "a_file";
  std::ofstream(file) << "not a folder";
  for (const std::string tutorial : {"01_matmul_add", "02_linear", "03_mlp", "04_attention"}) {
    const std::string small = tutorial == "03_mlp"         ? " --batch 1 --seq 2 --dim 8 --hidden 8"
                              : tutorial == "04_attention" ? " --batch 1 --heads 1 --seq 4 --head-dim 4"
                                                           : "";
    check_one_line_error(tutorial, "--device cpu --out-dir /proc/x" + small, 1, "--out-dir /proc/x: cannot create");
    check_one_line_error(tutorial, "--device cpu --out-dir ''" + small, 1, "--out-dir: the path is empty");
    check_one_line_error(tutorial, "--device cpu --out-dir " + file.string() + small, 1,
                         "--out-dir " + file.string());
    check_one_line_error(tutorial, "--device cpu --out-dir " + (file / "below").string() + small, 1,
                         "--out-dir " + (file / "below").string());
  }
  if (getuid() != 0) {  // root writes anywhere
    const fs::path locked = scratch() / "locked";
    fs::create_directories(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    check_one_line_error("02_linear", "--device cpu --tokens 4 --out-dir " + locked.string(), 1,
                         "cannot write files there");
    fs::permissions(locked, fs::perms::owner_all);
  }
}

TEST_CASE("tutorial flags: a table or trace that cannot be written is an error, not a line saying it was written") {
  // A folder where the table .txt (or the trace .json) should go: the write fails.
  const fs::path dir = scratch() / "blocked";
  fs::create_directories(dir / "4x8x8_f32_cold_eager.txt");
  check_one_line_error("02_linear", "--device cpu --dtype f32 --tokens 4 --in 8 --out 8 --out-dir " + dir.string(), 1,
                       "cannot write " + (dir / "4x8x8_f32_cold_eager.txt").string());
  fs::create_directories(dir / "4x8x8_f32_cold_fused.json");
  check_one_line_error("02_linear",
                       "--device cpu --dtype f32 --tokens 4 --in 8 --out 8 --fused --out-dir " + dir.string(), 1,
                       "export_chrome_trace: cannot");
  fs::create_directories(dir / "1x1x4x4_f32_cold_math.txt");
  check_one_line_error("04_attention",
                       "--device cpu --dtype f32 --batch 1 --heads 1 --seq 4 --head-dim 4 --path math --out-dir " +
                           dir.string(),
                       1, "cannot write " + (dir / "1x1x4x4_f32_cold_math.txt").string());
  // And the success path still writes both and says so.
  const Outcome ok = run("02_linear", "--device cpu --dtype f32 --tokens 4 --in 8 --out 8 --out-dir " +
                                          (scratch() / "fine").string());
  CHECK(ok.exit_code == 0);
  CHECK(fs::file_size(scratch() / "fine" / "4x8x8_f32_cold_eager.txt") > 0);
  CHECK(fs::file_size(scratch() / "fine" / "4x8x8_f32_cold_eager.json") > 0);
}

TEST_CASE("tutorial flags: --help still exits 0") {
  for (const char* tutorial : {"00_tensors_and_views", "01_matmul_add", "02_linear", "03_mlp", "04_attention",
                               "05_memory_and_syncs"}) {
    const Outcome o = run(tutorial, "--help");
    INFO(tutorial, o.err);
    CHECK(o.exit_code == 0);
    CHECK(o.out.find("--device") != std::string::npos);
  }
}

namespace {

const char* const kTutorials[] = {"00_tensors_and_views", "01_matmul_add", "02_linear",
                                  "03_mlp",               "04_attention",  "05_memory_and_syncs"};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

}  // namespace

TEST_CASE("tutorial flags: --help lists each flag's values once and plainly, and a bad value names the same choices") {
  // An option line of CLI11's help: "  --name VALUES   description" (the description may be on the next line).
  const std::regex option_line(R"(^  (-[-\w,]+)(?: (\S(?:\S| (?! ))*))?(?:\s{2,}(.*))?$)");
  for (const char* tutorial : kTutorials) {
    const Outcome o = run(tutorial, "--help");
    INFO(tutorial, "\n", o.out);
    REQUIRE(o.exit_code == 0);
    // CLI11's own renderings: a type before a check ("INT:INT in [1, 64]", "TEXT:{a,b}"), a set in
    // braces (which shows "cpu,cuda" and "cpu" as {cpu,cuda,cpu}), a negated flag's "{false}".
    CHECK(o.out.find("TEXT") == std::string::npos);
    CHECK(o.out.find("INT:") == std::string::npos);
    CHECK(o.out.find('{') == std::string::npos);
    CHECK(o.out.find('}') == std::string::npos);
    int choice_flags = 0;
    for (const std::string& line : split(o.out, '\n')) {
      std::smatch m;
      if (!std::regex_match(line, m, option_line) || !m[2].matched) continue;
      const std::string name = m[1], values = m[2], description = m[3];
      if (values.find('|') == std::string::npos) continue;
      ++choice_flags;
      INFO(name, " lists ", values);
      const std::vector<std::string> choices = split(values, '|');
      const std::set<std::string> unique(choices.begin(), choices.end());
      CHECK(unique.size() == choices.size());  // each choice once
      for (const std::string& c : choices) CHECK(!c.empty());
      // The description does not list the choices a second time.
      int repeated = 0;
      for (const std::string& c : choices)
        repeated += std::regex_search(description, std::regex("(^|[^\\w,])" + c + "($|[^\\w,])"));
      CHECK(repeated < static_cast<int>(choices.size()));
      // A value that is not a choice: one line naming the flag, the value and the same choices.
      std::string expected;
      for (size_t i = 0; i < choices.size(); ++i)
        expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + ("'" + choices[i] + "'");
      check_one_line_error(tutorial, name + " bogus", 2, name + ": 'bogus' is not a choice: expected " + expected);
    }
    // --dtype (every tutorial but 00) and --path or --lesson where a tutorial has one.
    const int want = std::string(tutorial) == "00_tensors_and_views" ? 0
                     : std::string(tutorial) == "01_matmul_add"      ? 3  // --bias, --dtype, --activities
                     : std::string(tutorial) == "02_linear"          ? 2  // --dtype, --activities
                                                                     : 3;  // + --path or --lesson
    CHECK(choice_flags == want);
  }
  check_one_line_error("01_matmul_add", "--activities cuda", 2,
                       "--activities: 'cuda' is not a choice: expected 'cpu,cuda' or 'cpu'");
  check_one_line_error("04_attention", "--causal --no-causal", 2, "--causal");
}

TEST_CASE("tutorial flags: --tag takes letters, digits, '-' and '_', and ends the files' names with it") {
  for (const char* tutorial : kTutorials) {
    check_one_line_error(tutorial, "--tag 'a/b'", 2, "--tag: 'a/b' has the character '/': expected letters, digits");
    check_one_line_error(tutorial, "--tag 'my run'", 2, "--tag: 'my run' has the character ' '");
    check_one_line_error(tutorial, "--tag ''", 2, "--tag: the tag is empty");
  }
  const fs::path dir = scratch() / "tagged";
  const std::string args = "--device cpu --dtype f32 --tokens 4 --in 8 --out 8 --out-dir " + dir.string();
  const Outcome before = run("02_linear", args + " --tag before-1");
  const Outcome after = run("02_linear", args + " --tag after_2");
  INFO(before.out, after.out);
  REQUIRE(before.exit_code == 0);
  REQUIRE(after.exit_code == 0);
  for (const char* name : {"4x8x8_f32_cold_eager_before-1", "4x8x8_f32_cold_eager_after_2"}) {
    CHECK(fs::file_size(dir / (std::string(name) + ".json")) > 0);
    CHECK(fs::file_size(dir / (std::string(name) + ".txt")) > 0);
  }
  // Each run says where its files went; a run again under the same name says it replaced them.
  CHECK(before.out.find("wrote the trace " + (dir / "4x8x8_f32_cold_eager_before-1.json").string()) != std::string::npos);
  CHECK(before.out.find("the table " + (dir / "4x8x8_f32_cold_eager_before-1.txt").string()) != std::string::npos);
  CHECK(before.out.find("replaced") == std::string::npos);
  const Outcome again = run("02_linear", args + " --tag before-1");
  CHECK(again.out.find("files of an earlier run had these names and were replaced; --tag NAME") != std::string::npos);
  const Outcome views = run("00_tensors_and_views", "--device cpu --tag before --out-dir " + dir.string());
  CHECK(views.exit_code == 0);
  CHECK(fs::exists(dir / "views_cpu_before.json"));
  CHECK(fs::exists(dir / "views_cpu_before.txt"));
}

namespace {

// One line of a child's output and when it arrived, in seconds from the start.
struct Arrival {
  double at = 0;
  std::string text;
};

// Runs `tutorial args` with stdout and stderr into one pipe, as `tutorial ... 2>&1 | tee log`
// does, and timestamps every line as it arrives.
std::vector<Arrival> run_through_pipe(const std::string& tutorial, const std::string& args, int* status) {
  const std::string command = std::string("\"") + TS_TUTORIAL_DIR + "/" + tutorial + "\" " + args + " 2>&1";
  std::vector<Arrival> lines;
  const auto start = std::chrono::steady_clock::now();
  std::FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char chunk[1 << 16];
  while (std::fgets(chunk, sizeof chunk, pipe) != nullptr)
    lines.push_back({std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), chunk});
  *status = pclose(pipe);
  return lines;
}

// The first line that contains `needle`; lines.size() when none does.
size_t find_line(const std::vector<Arrival>& lines, const std::string& needle) {
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].text.find(needle) != std::string::npos) return i;
  return lines.size();
}

}  // namespace

TEST_CASE("tutorial flags: through a pipe the guess arrives before the profile ends, and stderr lands in order") {
  // A GEMM large enough that the profiled steps take a good fraction of a second on the CPU,
  // with the cold-start schedule so that the profiler prints its warning on stderr.
  int status = 0;
  const std::vector<Arrival> lines = run_through_pipe(
      "01_matmul_add", "--device cpu --dtype f32 --size 1280 --active 5 --schedule-wait 0 --schedule-warmup 0 "
                       "--out-dir " + (scratch() / "pipe").string(), &status);
  std::string all;
  for (const Arrival& a : lines) all += fmt_line(a.at, a.text);
  INFO(all);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const size_t header = find_line(lines, "== Tutorial 01"), guess = find_line(lines, "Guess first");
  const size_t note = find_line(lines, "note: with a schedule warmup of 0");
  const size_t warning = find_line(lines, "warning: profiler schedule");
  const size_t table = find_line(lines, "Self CPU %"), widths = find_line(lines, "ProfilerStep widths");
  REQUIRE(table < lines.size());
  REQUIRE(widths < lines.size());
  // Lines in the order they were printed, stderr's warning among them right after its note.
  CHECK(header < guess);
  CHECK(guess < note);
  CHECK(note < warning);
  CHECK(warning < table);
  // The recorded steps' widths (printed after the table, in us) bound the profile's duration
  // from below: the guess must have arrived at least that long before the table.
  double recorded_s = 0;
  const std::regex width(R"(#\d+ ([\d.]+))");
  const std::string& w = lines[widths].text;
  for (auto it = std::sregex_iterator(w.begin(), w.end(), width); it != std::sregex_iterator(); ++it)
    recorded_s += std::stod((*it)[1]) / 1e6;
  INFO("recorded steps ", recorded_s, " s; guess at ", lines[guess].at, " s, table at ", lines[table].at, " s");
  REQUIRE(recorded_s > 0.02);  // enough work for the interval to stand far above a pipe's latency (microseconds)
  CHECK(lines[table].at - lines[guess].at >= 0.8 * recorded_s);
}

TEST_CASE("tutorial flags: through a pipe tutorial 05's lesson header and note arrive before the profiler's warning") {
  // Tutorial 05's memory lesson records its first forwards with a schedule warmup of 0: the
  // profiler's warning must land under the lesson's header and the note that explains it.
  int status = 0;
  const std::vector<Arrival> lines = run_through_pipe(
      "05_memory_and_syncs", "--device cpu --lesson memory --batch 1 --seq 4 --dim 16 --hidden 32 --out-dir " +
                                 (scratch() / "pipe05").string(), &status);
  std::string all;
  for (const Arrival& a : lines) all += fmt_line(a.at, a.text);
  INFO(all);
  CHECK(WIFEXITED(status));
  const size_t lesson = find_line(lines, "== Lesson 1: memory"), guess = find_line(lines, "Guess first");
  const size_t first = find_line(lines, "-- the first 3 forwards"), note = find_line(lines, "note: with a schedule warmup");
  const size_t warning = find_line(lines, "warning: profiler schedule"), table = find_line(lines, "Self CPU %");
  REQUIRE(warning < lines.size());
  CHECK(lesson < guess);
  CHECK(guess < first);
  CHECK(first < note);
  CHECK(note < warning);
  CHECK(warning < table);
}
