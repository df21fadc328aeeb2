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
int run_tutorial(const std::string& name) {
  const std::string command = std::string("\"") + TS_TUTORIAL_DIR + "/" + name + "\" --device cpu > /dev/null 2>&1";
  const int status = std::system(command.c_str());
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("tutorials: 00_tensors_and_views runs and passes its check") {
  CHECK(run_tutorial("00_tensors_and_views") == 0);
}
