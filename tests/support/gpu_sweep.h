// tests/support/gpu_sweep.h: how much of each GPU sweep a run covers (TS_GPU_TEST_QUICK).
//
//   unset or 0  every case: the GPU suite
//   1           every other case of each sweep: fewer, every kernel still launched
//   once        each rung until it has run one case of each dtype (each dtype is a kernel of its
//               own), at the sweeps' smallest sizes: every kernel launched once, which is what
//               the compute-sanitizer steps of make gpu-check need, in a fraction of the time
// Anything else stops the run with a message: a mode mistyped must not pass by testing less.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ts::testing {

enum class Sweep { full, half, once };

inline Sweep gpu_sweep() {
  static const Sweep mode = [] {
    const char* env = std::getenv("TS_GPU_TEST_QUICK");
    const std::string_view v = env != nullptr ? env : "";
    if (v.empty() || v == "0") return Sweep::full;
    if (v == "1") return Sweep::half;
    if (v == "once") return Sweep::once;
    std::fprintf(stderr, "TS_GPU_TEST_QUICK='%s': expected 0, 1 or once\n", env);
    std::exit(2);
  }();
  return mode;
}

// Anything less than the full sweep.
inline bool gpu_quick() { return gpu_sweep() != Sweep::full; }

// Case i of a sweep that forces one rung (a call it refuses is an error): every case, every
// other one, or the first.
inline bool sweep_runs(size_t i) {
  switch (gpu_sweep()) {
    case Sweep::full: return true;
    case Sweep::half: return i % 2 == 0;
    case Sweep::once: return i == 0;
  }
  return true;
}

}  // namespace ts::testing
