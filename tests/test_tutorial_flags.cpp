// tests/test_tutorial_flags.cpp: the tutorials never abort. A bad flag, a bad value, an
// output folder that cannot be written or a table that cannot be saved each end the
// program with ONE line on stderr ("error: ...") and a non-zero exit code: 2 for a flag
// that does not parse, 1 for everything else. A signal (abort, segfault) or a sanitizer
// report fails the case.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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
  for (const char* tutorial : {"00_tensors_and_views", "01_matmul_add", "02_linear", "03_mlp", "04_attention"}) {
    const Outcome o = run(tutorial, "--help");
    INFO(tutorial, o.err);
    CHECK(o.exit_code == 0);
    CHECK(o.out.find("--device") != std::string::npos);
  }
}
