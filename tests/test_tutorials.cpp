// tests/test_tutorials.cpp: tutorials are tests: each runs at its default (small) size and
// returns non-zero when its own validation fails.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

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

// Runs a tutorial with its output captured (stdout and stderr); returns {exit code, output}.
std::pair<int, std::string> run_captured(const std::string& name, const std::string& args) {
  const std::string command = std::string("\"") + TS_TUTORIAL_DIR + "/" + name + "\" " + args + " 2>&1";
  std::string output;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, output};
  char chunk[4096];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) output.append(chunk, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
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
    const auto [status, out] = run_captured("04_attention", std::string("--path ") + path + " --head-dim 96" + small);
    INFO(out);
    CHECK(status != 0);
    CHECK(out.find("head dim 96 is not supported") != std::string::npos);
  }
}
