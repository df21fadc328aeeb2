// tests/support/case_rng.h: what the fuzzers share: one random stream per case, and their
// environment knobs (seed, count, first case).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

namespace ts::testing {

// The unsigned integer in environment variable `name`, or `fallback` when it is unset or empty.
// Anything else (not a decimal number, past 2^64 - 1, or below `least`) throws, failing the test
// that asked: a sweep given TS_FUZZ_CASES=0 or =abc must not pass having run nothing.
inline uint64_t env_u64(const char* name, uint64_t fallback, uint64_t least = 0) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  uint64_t value = 0;
  const char* end = v + std::strlen(v);
  const auto [stop, error] = std::from_chars(v, end, value);
  if (error != std::errc() || stop != end || value < least)
    throw std::invalid_argument(std::string(name) + "='" + v + "': expected a whole number of at least " +
                                std::to_string(least));
  return value;
}

// A stream of its own for case `index` of a run with `seed` (splitmix64 of the two), so that any
// case replays alone from (seed, index).
struct CaseRng {
  std::mt19937_64 engine;
  CaseRng(uint64_t seed, uint64_t index) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (index + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    engine.seed(z ^ (z >> 31));
  }
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(engine); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(engine) < p; }
};

}  // namespace ts::testing
