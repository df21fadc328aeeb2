// tests/test_tutorials.cpp: tutorials are tests: each runs at its default (small) size and
// returns non-zero when its own validation fails.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <string>

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

}  // namespace

TEST_CASE("tutorials: 00_tensors_and_views runs and passes its check") {
  CHECK(run_tutorial("00_tensors_and_views") == 0);
}

TEST_CASE("tutorials: 02_linear runs eager and with the pre-transposed weight, and passes its check") {
  const std::string out = " --out-dir /tmp/ts_tutorial_test/02_linear";
  CHECK(run_tutorial("02_linear", "--tokens 64" + out) == 0);
  CHECK(run_tutorial("02_linear", "--tokens 64 --fused --dtype f32" + out) == 0);
}

TEST_CASE("tutorials: 03_mlp runs every path at a small size and passes its check") {
  for (const char* path : {"eager", "fused", "merged"}) {
    INFO(path);
    CHECK(run_tutorial("03_mlp", std::string("--batch 2 --seq 8 --dim 64 --hidden 96 --path ") + path +
                                     " --out-dir /tmp/ts_tutorial_test/03_mlp") == 0);
  }
}
