// tests/test_bad_input.cpp: every public op of ops/ops.h fed bad input: wrong shapes,
// dtypes and devices (cuda tensors on a machine without a GPU), undefined tensors, zero
// and huge sizes, NaN and inf. Each case expects either a ts::Error whose message names
// the op, or a correct result, and runs in a forked child process: a crash (a signal,
// a sanitizer report) fails that case, never the suite.
//
// A case that fails because of a known bug in ops/ still runs: it is listed, with its
// reproducer, in kExpectedToFail below. Such a case must keep failing; once the bug is
// fixed it passes, and the suite fails until the case leaves the list.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ops/op.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "tensor/allocator.h"
#include "tensor/cuda_device.h"
#include "tensor/storage.h"

using ts::Dims;
using ts::DType;
using ts::Tensor;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t k2to32 = int64_t{1} << 32;

// ---- the cases -------------------------------------------------------------------------

enum class Expect { error, result };

struct BadCase {
  std::string name;     // "<op>: <what is bad>", unique
  Expect expect;
  std::string op;       // an error must name this op ("|" separates alternatives)
  std::function<bool()> body;  // Expect::result: true when the result is right
  bool needs_no_gpu = false;   // a case about cuda tensors on a machine without a GPU
};

// The cases that fail today because of a bug in ops/. Name -> reproducer and what happens.
// Empty while every case passes: a bug found later is listed here with its reproducer
// until it is fixed.
const std::map<std::string, std::string, std::less<>> kExpectedToFail = {
};

// Cases that pass in a normal build but fail under the sanitizers (the sanitize preset),
// because of undefined behavior in ops/ that a normal build happens to survive.
const std::map<std::string, std::string, std::less<>> kExpectedToFailUnderSanitizers = {};

#ifdef TS_SANITIZE_BUILD
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

const std::string* expected_failure(const std::string& name) {
  if (const auto it = kExpectedToFail.find(name); it != kExpectedToFail.end()) return &it->second;
  if (const auto it = kExpectedToFailUnderSanitizers.find(name); kSanitized && it != kExpectedToFailUnderSanitizers.end())
    return &it->second;
  return nullptr;
}

// ---- helpers for the bodies ----------------------------------------------------------------

Tensor f32(const Dims& shape, double value = 1) { return ts::full(shape, value); }

// 2^62 elements over one float (stride 0): any op that copies it needs 2^64 bytes.
Tensor huge_expanded() { return ts::expand(f32({1}), {int64_t{1} << 31, int64_t{1} << 31}); }

// An empty view [4, 0] whose dim 0 has stride 2^62: valid (it addresses nothing), but
// 3 steps along dim 0 overflow int64.
Tensor empty_with_huge_stride() { return ts::as_strided(f32({4}), {4, 0}, {int64_t{1} << 62, 1}, 0); }

bool all_nan(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (!std::isnan(v)) return false;
  return true;
}

bool values_are(const Tensor& t, const std::vector<double>& want) {
  const std::vector<double> got = t.to_vector<double>();
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
    if (!same) return false;
  }
  return true;
}

// Host memory that says it lives on cuda:0: a cuda tensor on a machine without a GPU.
class PretendCudaAllocator final : public ts::Allocator {
 public:
  void* allocate(size_t nbytes, ts::Device) override { return std::calloc(nbytes ? nbytes : 1, 1); }
  void deallocate(void* ptr, size_t, ts::Device) override { std::free(ptr); }
  ts::AllocatorStats stats(ts::Device) const override { return {}; }
};

Tensor pretend_cuda(const Dims& shape, DType dtype = DType::f32) {
  static PretendCudaAllocator pretend;
  ts::Allocator* previous = nullptr;
  try {
    previous = &ts::allocator_for(ts::kCUDA);
  } catch (const ts::Error&) {
  }
  ts::set_allocator(ts::DeviceType::cuda, &pretend);
  auto storage = std::make_shared<ts::Storage>(static_cast<size_t>(ts::checked_nbytes(shape, dtype, "test")), ts::kCUDA);
  ts::set_allocator(ts::DeviceType::cuda, previous);
  return Tensor(std::move(storage), shape, ts::contiguous_strides(shape), 0, dtype);
}

#define ERR(name, op, ...) BadCase{name, Expect::error, op, [] { (void)(__VA_ARGS__); return true; }}
#define OK(name, ...) BadCase{name, Expect::result, "", [] { return static_cast<bool>(__VA_ARGS__); }}
#define NO_GPU_ERR(name, op, ...) \
  BadCase{name, Expect::error, op, [] { (void)(__VA_ARGS__); return true; }, /*needs_no_gpu=*/true}

std::vector<BadCase> factory_cases() {
  return {
      ERR("empty: negative size", "empty", ts::empty({2, -1})),
      ERR("zeros: negative size", "empty", ts::zeros({-3})),
      ERR("full: negative size", "empty", ts::full({-1, 2}, 1.0)),
      ERR("empty: numel overflows int64", "empty", ts::empty({k2to32, k2to32})),
      ERR("zeros: bytes overflow int64 (2^62 f32)", "empty", ts::zeros({int64_t{1} << 62})),
      ERR("ones: bytes overflow int64 (2^61 f32)", "empty", ts::ones({int64_t{1} << 61})),
      ERR("empty: 2^60 bytes, more than any machine", "empty", ts::empty({int64_t{1} << 60}, DType::b8)),
      ERR("zeros: int64 max size", "empty", ts::zeros({kMax})),
      OK("zeros: zero-size dims", ts::zeros({0, 3}).numel() == 0 && ts::zeros({4, 0}).shape() == Dims{4, 0}),
      OK("zeros: zero-size dim beside huge ones", ts::zeros({k2to32, k2to32, 0}).numel() == 0),
      OK("empty: no dims is a scalar", ts::empty({}).numel() == 1),
      OK("full: NaN", all_nan(ts::full({3}, kNaN))),
      OK("full: inf in f16 and bf16", values_are(ts::full({2}, kInf, DType::f16), {kInf, kInf}) &&
                                          values_are(ts::full({1}, -kInf, DType::bf16), {-kInf})),
      ERR("full: 1e6 is past f16's range (PyTorch refuses it too)", "full", ts::full({1}, 1e6, DType::f16)),
      ERR("full: NaN into i64", "fill_|full", ts::full({2}, kNaN, DType::i64)),
      ERR("full: inf into i64", "fill_|full", ts::full({2}, kInf, DType::i64)),
      ERR("full: 1e30 into i64", "fill_|full", ts::full({2}, 1e30, DType::i64)),
      OK("full: NaN into bool is true", values_are(ts::full({1}, kNaN, DType::b8), {1})),
      ERR("full: -inf into i64", "full", ts::full({1}, -kInf, DType::i64)),
      ERR("full: 2^63 into i64 (one past the range)", "full", ts::full({1}, 9223372036854775808.0, DType::i64)),
      OK("full: -2^63 into i64 fits", values_are(ts::full({1}, -9223372036854775808.0, DType::i64), {-9223372036854775808.0})),
      OK("full: 2.9 into i64 truncates", values_are(ts::full({2}, -2.9, DType::i64), {-2, -2})),
      ERR("full: NaN into i64 checked before a huge allocation", "full", ts::full({int64_t{1} << 62}, kNaN, DType::i64)),
      ERR("rand: i64 dtype", "rand", ts::rand({2}, DType::i64)),
      ERR("randn: bool dtype", "randn", ts::randn({2}, DType::b8)),
      ERR("randn: negative size", "randn|empty", ts::randn({-2})),
      ERR("rand: numel overflows int64", "rand", ts::rand({k2to32, k2to32})),
      ERR("randn: bytes overflow int64", "randn", ts::randn({int64_t{1} << 62})),
      OK("randn: zero size", ts::randn({0, 5}).numel() == 0),
      ERR("arange: step 0", "arange", ts::arange(0.0, 10.0, 0.0)),
      ERR("arange: integer step 0", "arange", ts::arange(0, 10, 0)),
      ERR("arange: step of the wrong sign", "arange", ts::arange(0.0, 10.0, -1.0)),
      ERR("arange: integer step of the wrong sign", "arange", ts::arange(0, 10, -1)),
      ERR("arange: a uint64 bound past int64", "arange", ts::arange(std::numeric_limits<uint64_t>::max())),
      ERR("arange: 2^64 - 1 integer elements", "arange", ts::arange(INT64_MIN, INT64_MAX)),
      ERR("arange: INT64_MAX integer elements (too many bytes)", "arange", ts::arange(INT64_MAX)),
      OK("arange: integer bounds across int64",
         values_are(ts::arange(INT64_MIN, INT64_MAX, int64_t{1} << 62, DType::i64),
                    {-9223372036854775808.0, -4611686018427387904.0, 0, 4611686018427387904.0})),
      ERR("arange: NaN end", "arange", ts::arange(0, kNaN)),
      ERR("arange: NaN start", "arange", ts::arange(kNaN, 3)),
      ERR("arange: NaN step", "arange", ts::arange(0, 3, kNaN)),
      ERR("arange: inf end", "arange", ts::arange(0, kInf)),
      ERR("arange: 1e30 elements", "arange", ts::arange(0, 1e30)),
      ERR("arange: 1e18 elements (representable, too many bytes)", "arange", ts::arange(0, 1e18)),
      ERR("arange: i64 values past int64", "arange", ts::arange(0, 1e20, 1e19, DType::i64)),
      ERR("arange: i64 start below int64", "arange", ts::arange(-1e19, 0, 1e18, DType::i64)),
      OK("arange: i64 near the top of int64", ts::arange(9.2e18, 9.21e18, 1e16, DType::i64).numel() == 1),
      ERR("arange: a step of 1e-300", "arange", ts::arange(0, 1, 1e-300)),
      OK("arange: empty range", ts::arange(3, 3).numel() == 0),
      OK("arange: i64", values_are(ts::arange(0, 3, 1, DType::i64), {0, 1, 2})),
      ERR("tensor: ragged rows", "tensor", ts::tensor({{1, 2}, {3}})),
      ERR("from_vector: wrong count", "from_vector", ts::from_vector(std::vector<float>{1, 2, 3}, {2, 2})),
      ERR("from_vector: negative dims whose product matches", "from_vector",
          ts::from_vector(std::vector<float>{1}, {-1, -1})),
      ERR("from_vector: NaN into i64", "from_vector", ts::from_vector(std::vector<double>{kNaN}, {1}, DType::i64)),
      ERR("from_vector: float inf into i64", "from_vector",
          ts::from_vector(std::vector<float>{1, INFINITY}, {2}, DType::i64)),
      ERR("tensor: 1e30 into i64", "from_vector|tensor", ts::tensor({1, 1e30}, DType::i64)),
      OK("from_vector: NaN into f32 stays NaN", all_nan(ts::from_vector(std::vector<double>{kNaN}, {1}))),
      OK("from_vector: int64 values into i64 exactly",
         ts::from_vector(std::vector<int64_t>{kMax, kMin}, {2}, DType::i64).to_vector<int64_t>() ==
             std::vector<int64_t>{kMax, kMin}),
      ERR("from_vector: shape numel overflows", "from_vector",
          ts::from_vector(std::vector<float>{}, {k2to32, k2to32})),
      ERR("empty: a zero-size shape whose contiguous strides overflow", "empty",
          ts::empty({0, k2to32, k2to32, k2to32})),
      NO_GPU_ERR("empty: cuda without a GPU", "empty", ts::empty({2}, ts::kCUDA)),
      NO_GPU_ERR("zeros: cuda without a GPU", "empty", ts::zeros({2}, ts::kCUDA)),
      NO_GPU_ERR("randn: cuda without a GPU", "randn", ts::randn({2}, ts::kCUDA)),
      NO_GPU_ERR("arange: cuda without a GPU", "arange", ts::arange(4, ts::kCUDA)),
      NO_GPU_ERR("tensor: cuda without a GPU", "to|tensor|empty", ts::tensor({1, 2}, ts::kCUDA)),
  };
}

std::vector<BadCase> copy_cases() {
  return {
      ERR("fill_: undefined", "fill_", [] { Tensor t; ts::fill_(t, 1); return 0; }()),
      ERR("fill_: an expanded (overlapping) tensor", "fill_",
          [] { Tensor t = f32({1}).expand({3}); ts::fill_(t, 1); return 0; }()),
      ERR("fill_: NaN into i64", "fill_", [] { Tensor t = ts::zeros({2}, DType::i64); ts::fill_(t, kNaN); return 0; }()),
      ERR("fill_: 1e19 into an i64 view", "fill_",
          [] { Tensor t = ts::zeros({2, 3}, DType::i64).t(); ts::fill_(t, 1e19); return 0; }()),
      OK("fill_: NaN into i64 leaves the tensor as it was", [] {
        Tensor t = ts::full({2}, 5, DType::i64);
        try {
          ts::fill_(t, kNaN);
        } catch (const ts::Error&) {
        }
        return values_are(t, {5, 5});
      }()),
      ERR("copy_: shapes that do not broadcast", "copy_",
          [] { Tensor d = f32({2, 3}); ts::copy_(d, f32({4})); return 0; }()),
      ERR("copy_: undefined source", "copy_", [] { Tensor d = f32({2}); ts::copy_(d, Tensor()); return 0; }()),
      ERR("copy_: undefined destination", "copy_", [] { Tensor d; ts::copy_(d, f32({2})); return 0; }()),
      ERR("copy_: into an expanded tensor", "copy_",
          [] { Tensor d = f32({1}).expand({4}); ts::copy_(d, f32({4})); return 0; }()),
      ERR("copy_: partial overlap of source and destination", "copy_", [] {
        Tensor x = ts::arange(6.0);
        Tensor d = x.narrow(0, 1, 4);
        ts::copy_(d, x.narrow(0, 0, 4));
        return 0;
      }()),
      OK("copy_: NaN into i64 is INT64_MIN, like PyTorch on x86", [] {
        Tensor d = ts::zeros({1}, DType::i64);
        ts::copy_(d, f32({1}, kNaN));
        return d.item<int64_t>() == kMin;
      }()),
      OK("copy_: broadcast source", [] {
        Tensor d = f32({2, 2}, 0);
        ts::copy_(d, ts::tensor({3, 4}));
        return values_are(d, {3, 4, 3, 4});
      }()),
      OK("copy_: zero size", [] { Tensor d = f32({0, 3}); ts::copy_(d, f32({3})); return d.numel() == 0; }()),
      ERR("clone: undefined", "clone", ts::clone(Tensor())),
      ERR("contiguous: undefined", "contiguous", ts::contiguous(Tensor())),
      ERR("clone: an expanded view of 2^62 elements", "clone", ts::clone(huge_expanded())),
      ERR("contiguous: an expanded view of 2^62 elements", "contiguous", ts::contiguous(huge_expanded())),
      ERR("to dtype: an expanded view of 2^62 elements", "to", ts::to(huge_expanded(), DType::bf16)),
      ERR("to dtype: undefined", "to", ts::to(Tensor(), DType::bf16)),
      ERR("to dtype: undefined, to the default dtype", "to", ts::to(Tensor(), DType::f32)),
      ERR("to device: undefined, to the cpu", "to", ts::to(Tensor(), ts::kCPU)),
      OK("to dtype: inf, NaN and 1e30 into i64 are INT64_MIN, like PyTorch on x86",
         ts::to(ts::tensor({kInf, kNaN, 1e30, -2.5}), DType::i64).to_vector<int64_t>() ==
             std::vector<int64_t>{kMin, kMin, kMin, -2}),
      OK("to dtype: NaN and inf into bf16 and f16", all_nan(ts::to(f32({2}, kNaN), DType::bf16)) &&
                                                      values_are(ts::to(f32({1}, -kInf), DType::f16), {-kInf})),
      NO_GPU_ERR("to device: cuda without a GPU", "to", ts::to(f32({2}), ts::kCUDA)),
      NO_GPU_ERR("to device: a cuda tensor back to the cpu without a GPU", "to|copy_",
                 ts::to(pretend_cuda({2}), ts::kCPU)),
      NO_GPU_ERR("clone: a cuda tensor without a GPU", "clone|empty|copy_", ts::clone(pretend_cuda({2}))),
      NO_GPU_ERR("copy_: cpu into cuda without a GPU", "copy_",
                 [] { Tensor d = pretend_cuda({2}); ts::copy_(d, f32({2})); return 0; }()),
      NO_GPU_ERR("copy_: cuda into cpu without a GPU", "copy_",
                 [] { Tensor d = f32({2}); ts::copy_(d, pretend_cuda({2})); return 0; }()),
      NO_GPU_ERR("fill_: a cuda tensor without a GPU", "fill_", [] { Tensor d = pretend_cuda({2}); ts::fill_(d, 1); return 0; }()),
  };
}

std::vector<BadCase> view_cases() {
  return {
      ERR("t: undefined", "t", ts::t(Tensor())),
      ERR("t: 3-D", "t", ts::t(f32({2, 3, 4}))),
      ERR("transpose: undefined", "transpose", ts::transpose(Tensor(), 0, 1)),
      ERR("transpose: dim out of range", "transpose", ts::transpose(f32({2, 3}), 0, 2)),
      ERR("transpose: int64 min dim", "transpose", ts::transpose(f32({2, 3}), kMin, 0)),
      ERR("permute: undefined", "permute", ts::permute(Tensor(), {0})),
      ERR("permute: repeated dim", "permute", ts::permute(f32({2, 3}), {0, 0})),
      ERR("permute: wrong length", "permute", ts::permute(f32({2, 3}), {0})),
      ERR("view: undefined", "view", ts::view(Tensor(), {1})),
      ERR("view: wrong numel", "view", ts::view(f32({2, 3}), {4})),
      ERR("view: two -1", "view", ts::view(f32({2, 3}), {-1, -1})),
      ERR("view: -2", "view", ts::view(f32({2, 3}), {-2, -3})),
      ERR("view: incompatible strides", "view", ts::view(f32({2, 3}).t(), {6})),
      ERR("view: -1 with a zero-size dim", "view", ts::view(f32({0, 3}), {0, -1})),
      ERR("view: numel overflows int64", "view", ts::view(f32({0}), {k2to32, k2to32})),
      ERR("view: numel overflows int64, with -1", "view", ts::view(f32({0}), {k2to32, k2to32, -1})),
      OK("view: huge sizes beside a zero-size dim", ts::view(f32({0}), {k2to32, k2to32, 0}).shape() == Dims{k2to32, k2to32, 0}),
      ERR("view: a zero-size shape whose contiguous strides overflow", "view",
          ts::view(f32({0}), {0, k2to32, k2to32, k2to32})),
      ERR("reshape: a zero-size shape whose contiguous strides overflow", "reshape",
          ts::reshape(f32({0}), {0, k2to32, k2to32, k2to32})),
      ERR("reshape: undefined", "reshape", ts::reshape(Tensor(), {1})),
      ERR("reshape: wrong numel", "reshape", ts::reshape(f32({2, 3}), {5})),
      ERR("reshape: numel overflows int64", "reshape", ts::reshape(f32({0}), {k2to32, k2to32})),
      ERR("unsqueeze: undefined", "unsqueeze", ts::unsqueeze(Tensor(), 0)),
      ERR("unsqueeze: dim out of range", "unsqueeze", ts::unsqueeze(f32({2}), 3)),
      ERR("unsqueeze: past 8 dims", "unsqueeze", ts::unsqueeze(f32({1, 1, 1, 1, 1, 1, 1, 1}), 0)),
      OK("unsqueeze: an empty view with a huge stride", ts::unsqueeze(empty_with_huge_stride(), 0).shape() == Dims{1, 4, 0}),
      ERR("squeeze: undefined", "squeeze", ts::squeeze(Tensor())),
      ERR("squeeze: dim out of range", "squeeze", ts::squeeze(f32({2, 1}), 2)),
      ERR("expand: undefined", "expand", ts::expand(Tensor(), {2})),
      ERR("expand: fewer sizes than dims", "expand", ts::expand(f32({2, 3}), {3})),
      ERR("expand: a non-singleton dim", "expand", ts::expand(f32({2, 3}), {4, 3})),
      ERR("expand: -2", "expand", ts::expand(f32({1}), {-2})),
      ERR("expand: -1 in a new leading dim", "expand", ts::expand(f32({2}), {-1, 2})),
      ERR("expand: numel overflows int64", "expand", ts::expand(f32({1}), {k2to32, k2to32})),
      OK("expand: 2^32 x 4 over one float (stride 0)", ts::expand(f32({1}), {k2to32, 4}).numel() == 4 * k2to32),
      ERR("narrow: undefined", "narrow", ts::narrow(Tensor(), 0, 0, 1)),
      ERR("narrow: 0-d", "narrow", ts::narrow(f32({}), 0, 0, 1)),
      ERR("narrow: start past the end", "narrow", ts::narrow(f32({4}), 0, 5, 0)),
      ERR("narrow: negative length", "narrow", ts::narrow(f32({4}), 0, 0, -1)),
      ERR("narrow: int64 max length", "narrow", ts::narrow(f32({4}), 0, 1, kMax)),
      ERR("narrow: int64 min start", "narrow", ts::narrow(f32({4}), 0, kMin, 1)),
      ERR("narrow: an offset past int64 in an empty view", "narrow", ts::narrow(empty_with_huge_stride(), 0, 3, 1)),
      OK("narrow: an empty view with a huge stride, at its start", ts::narrow(empty_with_huge_stride(), 0, 0, 2).numel() == 0),
      ERR("slice: undefined", "slice", ts::slice(Tensor(), 0, 0, 1)),
      ERR("slice: step 0", "slice", ts::slice(f32({4}), 0, 0, 4, 0)),
      ERR("slice: negative step", "slice", ts::slice(f32({4}), 0, 0, 4, -1)),
      OK("slice: int64 max step", ts::slice(f32({4}), 0, 0, 4, kMax).shape() == Dims{1}),
      OK("slice: int64 max step over a strided dim", ts::slice(f32({3, 4}), 0, 0, 3, kMax).shape() == Dims{1, 4}),
      OK("slice: int64 min start and max end", ts::slice(f32({4}), 0, kMin, kMax).shape() == Dims{4}),
      OK("slice: empty range", ts::slice(f32({4}), 0, 3, 1).numel() == 0),
      OK("slice: int64 max step keeps the first row's values", values_are(ts::slice(ts::arange(12.0).view({3, 4}), 0, 1, 3, kMax), {4, 5, 6, 7})),
      OK("slice: a huge step over a transposed view", ts::slice(f32({3, 4}).t(), 1, 0, 3, kMax - 1).shape() == Dims{4, 1}),
      ERR("slice: an offset past int64 in an empty view", "slice", ts::slice(empty_with_huge_stride(), 0, 3, 4)),
      ERR("slice: step times a huge stride in an empty view", "slice", ts::slice(empty_with_huge_stride(), 0, 0, 4, 2)),
      ERR("select: undefined", "select", ts::select(Tensor(), 0, 0)),
      ERR("select: 0-d", "select", ts::select(f32({}), 0, 0)),
      ERR("select: index out of range", "select", ts::select(f32({3}), 0, 3)),
      ERR("select: int64 min index", "select", ts::select(f32({3}), 0, kMin)),
      ERR("select: a zero-size dim", "select", ts::select(f32({0, 2}), 0, 0)),
      ERR("select: an offset past int64 in an empty view", "select", ts::select(empty_with_huge_stride(), 0, 3)),
      OK("select: an empty view with a huge stride, index 0", ts::select(empty_with_huge_stride(), 0, 0).shape() == Dims{0}),
      ERR("as_strided: undefined", "as_strided", ts::as_strided(Tensor(), {1}, {1}, 0)),
      ERR("as_strided: past the storage", "as_strided", ts::as_strided(f32({4}), {2}, {4}, 0)),
      OK("as_strided: the last element of the storage", values_are(ts::as_strided(ts::arange(4.0), {2}, {3}, 0), {0, 3})),
      ERR("as_strided: negative stride", "as_strided", ts::as_strided(f32({4}), {2}, {-1}, 1)),
      ERR("as_strided: negative offset", "as_strided", ts::as_strided(f32({4}), {1}, {1}, -1)),
      ERR("as_strided: lengths differ", "as_strided", ts::as_strided(f32({4}), {1, 1}, {1}, 0)),
      ERR("as_strided: huge stride", "as_strided", ts::as_strided(f32({4}), {3}, {kMax / 2}, 0)),
      ERR("as_strided: huge offset", "as_strided", ts::as_strided(f32({4}), {1}, {1}, kMax)),
      ERR("as_strided: numel overflows int64", "as_strided", ts::as_strided(f32({4}), {k2to32, k2to32}, {0, 0}, 0)),
      OK("as_strided: empty view with a far offset", ts::as_strided(f32({4}), {0}, {1}, 100).numel() == 0),
      OK("as_strided: an empty view with huge strides",
         ts::as_strided(f32({4}), {4, 0}, {int64_t{1} << 62, 1}, 0).numel() == 0),
      OK("as_strided: int64 max strides on size-1 dims", values_are(ts::as_strided(ts::arange(4.0), {1, 2, 1}, {kMax, 2, kMax}, 1), {1, 3})),
      OK("as_strided: int64 max strides on size-1 dims between others, copied",
         values_are(ts::contiguous(ts::as_strided(ts::arange(12.0), {2, 1, 3, 1}, {6, kMax, 2, kMax - 1}, 1)),
                    {1, 3, 5, 7, 9, 11})),
      OK("as_strided: an empty view whose inner sizes multiply past int64 is contiguous",
         ts::contiguous(ts::as_strided(f32({4}), {0, k2to32, k2to32}, {1, k2to32, 1}, 0)).numel() == 0),
      ERR("as_strided: an empty view at offset int64 max (data_ptr past int64 bytes)", "as_strided",
          ts::as_strided(f32({4}), {0}, {1}, kMax)),
      ERR("as_strided: int64 max stride reaching one element past", "as_strided",
          ts::as_strided(f32({4}), {2}, {kMax}, 0)),
      NO_GPU_ERR("t: a cuda tensor without a GPU", "t", ts::t(pretend_cuda({2, 3}))),
      NO_GPU_ERR("view: a cuda tensor without a GPU", "view", ts::view(pretend_cuda({2, 3}), {6})),
  };
}

std::vector<BadCase> elementwise_cases() {
  return {
      ERR("add: undefined a", "add", ts::add(Tensor(), f32({2}))),
      ERR("add: undefined b", "add", ts::add(f32({2}), Tensor())),
      ERR("add: shapes that do not broadcast", "add", ts::add(f32({2, 3}), f32({4}))),
      ERR("add: dtype mismatch", "add", ts::add(f32({2}), ts::ones({2}, DType::bf16))),
      ERR("add: i64", "add", ts::add(ts::ones({2}, DType::i64), ts::ones({2}, DType::i64))),
      ERR("add: bool", "add", ts::add(ts::ones({2}, DType::b8), 1.0)),
      ERR("sub: shapes that do not broadcast", "sub", ts::sub(f32({3}), f32({2}))),
      ERR("mul: undefined", "mul", ts::mul(Tensor(), 2.0)),
      ERR("mul: dtype mismatch", "mul", ts::mul(ts::ones({2}, DType::f16), f32({2}))),
      ERR("div: shapes that do not broadcast", "div", ts::div(f32({2, 2}), f32({3}))),
      ERR("div: i64", "div", ts::div(ts::ones({2}, DType::i64), 2.0)),
      ERR("neg: undefined", "neg", ts::neg(Tensor())),
      ERR("exp: i64", "exp", ts::exp(ts::ones({1}, DType::i64))),
      ERR("tanh: bool", "tanh", ts::tanh(ts::ones({1}, DType::b8))),
      ERR("gelu: undefined", "gelu", ts::gelu(Tensor())),
      ERR("relu: i64", "relu", ts::relu(ts::ones({1}, DType::i64))),
      ERR("add: output of 2^62 elements from expanded inputs", "add",
          ts::add(ts::expand(f32({1}), {int64_t{1} << 31, int64_t{1} << 31}), f32({1}))),
      OK("add: NaN and inf propagate", values_are(ts::add(ts::tensor({kNaN, kInf, -kInf}), ts::tensor({1, -kInf, 1})),
                                                  {kNaN, kNaN, -kInf})),
      OK("add: NaN alpha", all_nan(ts::add(f32({2}), f32({2}), kNaN))),
      OK("add: inf scalar", values_are(ts::add(f32({1}), kInf), {kInf})),
      OK("sub: inf - inf", all_nan(ts::sub(f32({1}, kInf), f32({1}, kInf)))),
      OK("mul: 0 * inf", all_nan(ts::mul(f32({1}, 0), kInf))),
      OK("div: by zero", values_are(ts::div(ts::tensor({1, -1, 0}), 0.0), {kInf, -kInf, kNaN})),
      OK("div: NaN divisor", all_nan(ts::div(f32({2}), f32({2}, kNaN)))),
      OK("neg: inf", values_are(ts::neg(ts::tensor({kInf, -kInf})), {-kInf, kInf})),
      OK("exp: inf, -inf, NaN, overflow", values_are(ts::exp(ts::tensor({kInf, -kInf, kNaN, 1000})), {kInf, 0, kNaN, kInf})),
      OK("tanh: inf and NaN", values_are(ts::tanh(ts::tensor({kInf, -kInf, kNaN})), {1, -1, kNaN})),
      OK("gelu: inf and NaN", values_are(ts::gelu(ts::tensor({kInf, kNaN})), {kInf, kNaN})),
      OK("gelu tanh: inf and NaN", values_are(ts::gelu(ts::tensor({kInf, kNaN}), ts::GeluApprox::tanh), {kInf, kNaN})),
      OK("relu: NaN stays NaN", values_are(ts::relu(ts::tensor({kNaN, -kInf, kInf})), {kNaN, 0, kInf})),
      OK("add: zero-size broadcast", ts::add(f32({0, 3}), f32({3})).shape() == Dims{0, 3}),
      OK("add: zero-size against size 1", ts::add(f32({0, 1}), f32({1, 4})).shape() == Dims{0, 4}),
      OK("mul: bf16 overflow to inf", values_are(ts::mul(ts::full({1}, 3e38, DType::bf16), 10.0), {kInf})),
      NO_GPU_ERR("add: cuda tensors without a GPU", "add", ts::add(pretend_cuda({2}), pretend_cuda({2}))),
      NO_GPU_ERR("add: cuda and cpu", "add", ts::add(pretend_cuda({2}), f32({2}))),
      NO_GPU_ERR("gelu: a cuda tensor without a GPU", "gelu", ts::gelu(pretend_cuda({2}))),
      NO_GPU_ERR("mul: a cuda tensor and a scalar without a GPU", "mul", ts::mul(pretend_cuda({2}), 2.0)),
      ERR("exp: output of 2^62 elements from an expanded input", "exp", ts::exp(huge_expanded())),
  };
}

std::vector<BadCase> softmax_masking_cases() {
  return {
      ERR("softmax: undefined", "softmax", ts::softmax(Tensor(), 0)),
      ERR("softmax: dim out of range", "softmax", ts::softmax(f32({2, 3}), 2)),
      ERR("softmax: int64 max dim", "softmax", ts::softmax(f32({2, 3}), kMax)),
      ERR("softmax: i64", "softmax", ts::softmax(ts::ones({3}, DType::i64), 0)),
      OK("softmax: a zero-size dim", ts::softmax(f32({0, 3}), 0).shape() == Dims{0, 3}),
      OK("softmax: all -inf is NaN", all_nan(ts::softmax(f32({3}, -kInf), 0))),
      OK("softmax: NaN propagates", all_nan(ts::softmax(ts::tensor({1, kNaN, 2}), 0))),
      OK("softmax: +inf makes the row NaN, like PyTorch", all_nan(ts::softmax(ts::tensor({kInf, 1}), 0))),
      OK("softmax: 0-d", values_are(ts::softmax(f32({}, 5), 0), {1})),
      OK("softmax: over a size-0 dim of a view with huge strides",
         ts::softmax(ts::as_strided(f32({4}), {3, 0, 3}, {kMax / 2, 0, 4}, 0), 1).shape() == Dims{3, 0, 3}),
      OK("_safe_softmax: all -inf is 0", values_are(ts::_safe_softmax(f32({2}, -kInf), 0), {0, 0})),
      ERR("_safe_softmax: dim out of range", "_safe_softmax", ts::_safe_softmax(f32({2}), 1)),
      ERR("masked_fill: undefined mask", "masked_fill", ts::masked_fill(f32({2}), Tensor(), 0)),
      ERR("masked_fill: f32 mask", "masked_fill", ts::masked_fill(f32({2}), f32({2}), 0)),
      ERR("masked_fill: mask that does not broadcast", "masked_fill",
          ts::masked_fill(f32({2, 3}), ts::ones({4}, DType::b8), 0)),
      ERR("masked_fill_: mask larger than x", "masked_fill_",
          [] { Tensor x = f32({3}); ts::masked_fill_(x, ts::ones({2, 3}, DType::b8), 0); return 0; }()),
      ERR("masked_fill_: an expanded x", "masked_fill_",
          [] { Tensor x = f32({1}).expand({3}); ts::masked_fill_(x, ts::ones({3}, DType::b8), 0); return 0; }()),
      OK("masked_fill: i64 x", values_are(ts::masked_fill(ts::ones({2}, DType::i64), ts::tensor({1, 0}, DType::b8), 5),
                                          {5, 1})),
      OK("masked_fill: NaN value", all_nan(ts::masked_fill(f32({2}), ts::ones({2}, DType::b8), kNaN))),
      OK("masked_fill: broadcast grows the result", ts::masked_fill(f32({3}), ts::ones({2, 3}, DType::b8), 0).shape() == Dims{2, 3}),
      ERR("masked_fill: NaN into i64", "masked_fill",
          ts::masked_fill(ts::ones({1}, DType::i64), ts::ones({1}, DType::b8), kNaN)),
      ERR("masked_fill: -inf into i64, nothing masked", "masked_fill",
          ts::masked_fill(ts::ones({2}, DType::i64), ts::zeros({2}, DType::b8), -kInf)),
      ERR("masked_fill_: 1e30 into i64", "masked_fill_",
          [] { Tensor x = ts::ones({2}, DType::i64); ts::masked_fill_(x, ts::ones({2}, DType::b8), 1e30); return 0; }()),
      ERR("masked_fill: a result of 2^62 elements", "masked_fill",
          ts::masked_fill(f32({1}), ts::expand(ts::ones({1}, DType::b8), {int64_t{1} << 31, int64_t{1} << 31}), 0)),
      ERR("where: output of 2^62 elements", "where",
          ts::where(ts::ones({1}, DType::b8), huge_expanded(), f32({1}))),
      ERR("softmax: output of 2^62 elements from an expanded input", "softmax", ts::softmax(huge_expanded(), 0)),
      ERR("triu: output of 2^62 elements from an expanded input", "triu", ts::triu(huge_expanded())),
      ERR("where: f32 condition", "where", ts::where(f32({2}), f32({2}), f32({2}))),
      ERR("where: dtype mismatch", "where", ts::where(ts::ones({2}, DType::b8), f32({2}), ts::ones({2}, DType::bf16))),
      ERR("where: shapes that do not broadcast", "where", ts::where(ts::ones({2}, DType::b8), f32({3}), f32({3}))),
      ERR("where: undefined", "where", ts::where(ts::ones({2}, DType::b8), Tensor(), f32({2}))),
      OK("where: NaN branches", values_are(ts::where(ts::tensor({1, 0}, DType::b8), f32({2}, kNaN), f32({2}, 3)), {kNaN, 3})),
      ERR("triu: 1-D", "triu", ts::triu(f32({3}))),
      ERR("tril: undefined", "tril", ts::tril(Tensor())),
      OK("triu: int64 max diagonal keeps nothing", values_are(ts::triu(f32({2, 2}), kMax), {0, 0, 0, 0})),
      OK("triu: int64 min diagonal keeps all", values_are(ts::triu(f32({2, 2}), kMin), {1, 1, 1, 1})),
      OK("tril: int64 min diagonal keeps nothing", values_are(ts::tril(f32({2, 2}), kMin), {0, 0, 0, 0})),
      OK("tril: int64 max diagonal keeps all", values_are(ts::tril(f32({2, 2}), kMax), {1, 1, 1, 1})),
      OK("triu: zero-size", ts::triu(f32({0, 3})).numel() == 0),
      OK("tril: an empty batch of matrices with a huge batch stride",
         ts::tril(ts::as_strided(f32({4}), {3, 0, 2}, {kMax / 2, 1, 1}, 0)).shape() == Dims{3, 0, 2}),
      NO_GPU_ERR("softmax: a cuda tensor without a GPU", "softmax", ts::softmax(pretend_cuda({2}), 0)),
      NO_GPU_ERR("masked_fill: cuda tensors without a GPU", "masked_fill",
                 ts::masked_fill(pretend_cuda({2}), pretend_cuda({2}, DType::b8), 0)),
      NO_GPU_ERR("masked_fill_: NaN into a cuda i64 tensor without a GPU", "masked_fill_", [] {
        Tensor x = pretend_cuda({2}, DType::i64);
        ts::masked_fill_(x, pretend_cuda({2}, DType::b8), kNaN);
        return 0;
      }()),
  };
}

std::vector<BadCase> reduce_cases() {
  return {
      ERR("sum: undefined", "sum", ts::sum(Tensor(), 0)),
      ERR("sum: dim out of range", "sum", ts::sum(f32({2}), 1)),
      ERR("sum: int64 min dim", "sum", ts::sum(f32({2}), kMin)),
      ERR("sum: i64", "sum", ts::sum(ts::ones({2}, DType::i64), 0)),
      ERR("max: a zero-size dim", "max", ts::max(f32({0, 2}), 0)),
      ERR("max: undefined", "max", ts::max(Tensor(), 0)),
      ERR("max: bool", "max", ts::max(ts::ones({2}, DType::b8), 0)),
      OK("sum: over a zero-size dim is 0", values_are(ts::sum(f32({0, 2}), 0), {0, 0})),
      OK("sum: of a 0-d tensor", values_are(ts::sum(f32({}, 4), 0), {4})),
      OK("sum: inf - inf", all_nan(ts::sum(ts::tensor({kInf, -kInf}), 0))),
      OK("sum: f16 overflows to inf", values_are(ts::sum(ts::full({3}, 60000, DType::f16), 0), {kInf})),
      OK("max: NaN wins, like PyTorch", [] {
        auto [v, i] = ts::max(ts::tensor({1, kNaN, 5}), 0);
        return all_nan(v) && i.item<int64_t>() == 1;
      }()),
      OK("max: all -inf", [] {
        auto [v, i] = ts::max(f32({3}, -kInf), 0);
        return values_are(v, {-kInf}) && i.item<int64_t>() == 0;
      }()),
      OK("max: keepdim over a size-1 dim", ts::max(f32({1, 0}), 0, true).first.shape() == Dims{1, 0}),
      OK("sum: over a size-0 dim of a view with huge strides is 0",
         values_are(ts::sum(ts::as_strided(f32({4}), {3, 2, 0}, {int64_t{1} << 62, int64_t{1} << 61, 1}, 0), 2),
                    {0, 0, 0, 0, 0, 0})),
      NO_GPU_ERR("sum: a cuda tensor without a GPU", "sum", ts::sum(pretend_cuda({2, 3}), 0)),
      NO_GPU_ERR("max: a cuda tensor without a GPU", "max", ts::max(pretend_cuda({2, 3}), 1)),
  };
}

std::vector<BadCase> matmul_cases() {
  return {
      ERR("mm: undefined", "mm", ts::mm(Tensor(), f32({2, 2}))),
      ERR("mm: 1-D", "mm", ts::mm(f32({3}), f32({3, 2}))),
      ERR("mm: 3-D", "mm", ts::mm(f32({2, 2, 2}), f32({2, 2}))),
      ERR("mm: shapes", "mm", ts::mm(f32({2, 3}), f32({4, 2}))),
      ERR("mm: dtype mismatch", "mm", ts::mm(f32({2, 2}), ts::ones({2, 2}, DType::f16))),
      ERR("mm: i64", "mm", ts::mm(ts::ones({2, 2}, DType::i64), ts::ones({2, 2}, DType::i64))),
      ERR("mm: output of 2^64 elements (K = 0)", "mm",
          ts::mm(ts::expand(f32({1, 1}), {k2to32, 0}), ts::expand(f32({1, 1}), {0, k2to32}))),
      OK("mm: K = 0 gives zeros", values_are(ts::mm(f32({2, 0}), f32({0, 2})), {0, 0, 0, 0})),
      OK("mm: M = 0", ts::mm(f32({0, 3}), f32({3, 2})).shape() == Dims{0, 2}),
      OK("mm: K = 0 with huge row strides gives zeros",
         values_are(ts::mm(ts::as_strided(f32({4}), {3, 0}, {int64_t{1} << 62, 1}, 0), f32({0, 2})), {0, 0, 0, 0, 0, 0})),
      OK("mm: a single row whose stride does not fit in int32",
         values_are(ts::mm(ts::as_strided(f32({4}, 2.75), {1, 1}, {int64_t{1} << 40, 1}, 3), f32({1, 1})), {2.75})),
      OK("bmm: K = 0 with a huge batch stride gives zeros",
         values_are(ts::bmm(ts::as_strided(f32({4}), {3, 1, 0}, {int64_t{1} << 62, 1, 1}, 0), f32({3, 0, 1})), {0, 0, 0})),
      OK("mm: NaN propagates to its row", [] {
        const Tensor out = ts::mm(ts::tensor({{kNaN, 1}, {1, 1}}), f32({2, 2}));
        const std::vector<double> v = out.to_vector<double>();
        return std::isnan(v[0]) && std::isnan(v[1]) && v[2] == 2 && v[3] == 2;
      }()),
      OK("mm: inf * 0 is NaN", all_nan(ts::mm(f32({1, 1}, kInf), f32({1, 1}, 0)))),
      ERR("bmm: batch mismatch", "bmm", ts::bmm(f32({2, 2, 3}), f32({3, 3, 2}))),
      ERR("bmm: 2-D", "bmm", ts::bmm(f32({2, 3}), f32({3, 2}))),
      ERR("bmm: undefined", "bmm", ts::bmm(f32({1, 2, 2}), Tensor())),
      ERR("matmul: 0-d", "matmul", ts::matmul(f32({}), f32({2}))),
      ERR("matmul: shapes", "matmul", ts::matmul(f32({2, 3}), f32({2, 3}))),
      ERR("matmul: batch dims that do not broadcast", "matmul", ts::matmul(f32({2, 2, 3}), f32({3, 3, 2}))),
      ERR("matmul: undefined", "matmul", ts::matmul(Tensor(), f32({2}))),
      OK("matmul: 1-D . 1-D is a 0-d dot", [] {
        const Tensor d = ts::matmul(ts::tensor({1, 2}), ts::tensor({3, 4}));
        return d.dim() == 0 && d.item<double>() == 11;
      }()),
      OK("matmul: zero-size batch", ts::matmul(f32({0, 2, 3}), f32({3, 4})).shape() == Dims{0, 2, 4}),
      ERR("addmm: bias that does not broadcast", "addmm", ts::addmm(f32({3}), f32({2, 2}), f32({2, 2}))),
      ERR("addmm: undefined bias", "addmm", ts::addmm(Tensor(), f32({2, 2}), f32({2, 2}))),
      ERR("addmm: shapes", "addmm", ts::addmm(f32({2}), f32({2, 3}), f32({2, 2}))),
      OK("addmm: beta 0 ignores a NaN bias, like PyTorch", values_are(ts::addmm(f32({2}, kNaN), f32({1, 1}), f32({1, 2}), 0), {1, 1})),
      OK("addmm: NaN alpha", all_nan(ts::addmm(f32({2}), f32({1, 1}), f32({1, 2}), 1, kNaN))),
      ERR("linear: in_features mismatch", "linear|addmm|matmul|mm", ts::linear(f32({2, 3}), f32({4, 5}))),
      ERR("linear: undefined weight", "linear|t", ts::linear(f32({2, 3}), Tensor())),
      ERR("linear: bias of the wrong size", "linear|addmm|add", ts::linear(f32({2, 3}), f32({4, 3}), f32({5}))),
      ERR("linear: 1-D weight", "linear|t|addmm|matmul", ts::linear(f32({2, 3}), f32({3}))),
      OK("linear: 3-D x", ts::linear(f32({2, 5, 3}), f32({4, 3}), f32({4})).shape() == Dims{2, 5, 4}),
      OK("linear: zero tokens", ts::linear(f32({0, 3}), f32({4, 3})).shape() == Dims{0, 4}),
      NO_GPU_ERR("mm: cuda tensors without a GPU", "mm", ts::mm(pretend_cuda({2, 2}), pretend_cuda({2, 2}))),
      NO_GPU_ERR("matmul: cuda and cpu", "matmul|mm", ts::matmul(pretend_cuda({2, 2}), f32({2, 2}))),
      NO_GPU_ERR("matmul: cuda tensors without a GPU", "matmul", ts::matmul(pretend_cuda({2, 2}), pretend_cuda({2, 2}))),
      ERR("bmm: output of 2^64 elements (K = 0)", "bmm",
          ts::bmm(ts::expand(f32({1, 1, 1}), {k2to32, 1, 0}), ts::expand(f32({1, 1, 1}), {k2to32, 0, k2to32}))),
  };
}

std::vector<BadCase> fused_cases() {
  return {
      ERR("linear_geglu: odd weight rows", "linear_geglu", ts::linear_geglu(f32({2, 4}), f32({3, 4}))),
      ERR("linear_geglu: features mismatch", "linear_geglu", ts::linear_geglu(f32({2, 5}), f32({6, 4}))),
      ERR("linear_geglu: 1-D weight", "linear_geglu", ts::linear_geglu(f32({2, 4}), f32({8}))),
      ERR("linear_geglu: undefined x", "linear_geglu", ts::linear_geglu(Tensor(), f32({6, 4}))),
      ERR("geglu: shape mismatch", "geglu", ts::geglu(f32({2, 3}), f32({2, 4}))),
      ERR("geglu: dtype mismatch", "geglu", ts::geglu(f32({2}), ts::ones({2}, DType::bf16))),
      ERR("geglu: i64", "geglu", ts::geglu(ts::ones({2}, DType::i64), ts::ones({2}, DType::i64))),
      ERR("geglu: undefined", "geglu", ts::geglu(Tensor(), f32({2}))),
      OK("geglu: zero size", ts::geglu(f32({0, 4}), f32({0, 4})).shape() == Dims{0, 4}),
      OK("geglu: NaN", all_nan(ts::geglu(f32({2}, kNaN), f32({2})))),
      NO_GPU_ERR("geglu: cuda tensors without a GPU", "geglu", ts::geglu(pretend_cuda({2}), pretend_cuda({2}))),
      ERR("geglu: output of 2^62 elements from expanded inputs", "geglu", ts::geglu(huge_expanded(), huge_expanded())),
      NO_GPU_ERR("sdpa: cuda tensors without a GPU", "scaled_dot_product_attention",
                 ts::scaled_dot_product_attention(pretend_cuda({1, 2, 4}), pretend_cuda({1, 3, 4}), pretend_cuda({1, 3, 4}))),
      ERR("sdpa: D mismatch", "scaled_dot_product_attention",
          ts::scaled_dot_product_attention(f32({1, 2, 4}), f32({1, 3, 5}), f32({1, 3, 4}))),
      ERR("sdpa: L mismatch", "scaled_dot_product_attention",
          ts::scaled_dot_product_attention(f32({1, 2, 4}), f32({1, 3, 4}), f32({1, 5, 4}))),
      ERR("sdpa: 1-D q", "scaled_dot_product_attention",
          ts::scaled_dot_product_attention(f32({4}), f32({3, 4}), f32({3, 4}))),
      ERR("sdpa: undefined k", "scaled_dot_product_attention",
          ts::scaled_dot_product_attention(f32({1, 2, 4}), Tensor(), f32({1, 3, 4}))),
      ERR("sdpa: dtype mismatch", "scaled_dot_product_attention",
          ts::scaled_dot_product_attention(f32({1, 2, 4}), ts::ones({1, 3, 4}, DType::bf16), f32({1, 3, 4}))),
      ERR("sdpa: mask that does not broadcast", "scaled_dot_product_attention|where|masked_fill|add",
          ts::scaled_dot_product_attention(f32({1, 2, 4}), f32({1, 3, 4}), f32({1, 3, 4}), ts::ones({4, 4}, DType::b8))),
      ERR("sdpa: i64 mask", "scaled_dot_product_attention",
          ts::scaled_dot_product_attention(f32({1, 2, 4}), f32({1, 3, 4}), f32({1, 3, 4}), ts::ones({2, 3}, DType::i64))),
      ERR("sdpa: is_causal with a mask", "scaled_dot_product_attention",
          ts::scaled_dot_product_attention(f32({1, 2, 4}), f32({1, 3, 4}), f32({1, 3, 4}), ts::ones({2, 3}, DType::b8),
                                           true)),
      OK("sdpa: S = 0", ts::scaled_dot_product_attention(f32({1, 0, 4}), f32({1, 3, 4}), f32({1, 3, 4})).shape() ==
                            Dims{1, 0, 4}),
      OK("sdpa: L = 0 gives zeros (safe softmax)",
         values_are(ts::scaled_dot_product_attention(f32({1, 1, 2}), f32({1, 0, 2}), f32({1, 0, 2})), {0, 0})),
      OK("sdpa: a fully masked row gives zeros", values_are(ts::scaled_dot_product_attention(
                                                                f32({1, 1, 2}), f32({1, 2, 2}), f32({1, 2, 2}),
                                                                ts::zeros({1, 2}, DType::b8)),
                                                            {0, 0})),
      OK("sdpa: NaN scale", all_nan(ts::scaled_dot_product_attention(f32({1, 1, 2}), f32({1, 2, 2}), f32({1, 2, 2}), {},
                                                                    false, kNaN))),
      OK("sdpa: NaN in q", all_nan(ts::scaled_dot_product_attention(f32({1, 1, 2}, kNaN), f32({1, 2, 2}), f32({1, 2, 2})))),
  };
}

std::vector<BadCase> tensor_cases() {
  return {
      ERR("item: many elements", "item", f32({2}).item<double>()),
      ERR("item: undefined", "item", Tensor().item<double>()),
      ERR("data<T>: wrong dtype", "data", f32({2}).data<int64_t>()),
      ERR("to_vector: undefined", "to_vector", Tensor().to_vector<float>()),
      ERR("size: dim out of range", "size", f32({2}).size(1)),
      ERR("stride: int64 min dim", "stride", f32({2}).stride(kMin)),
      OK("str: NaN, inf, undefined, empty", f32({2}, kNaN).str() == "tensor([nan, nan])" &&
                                               Tensor().str() == "tensor(undefined)" &&
                                               f32({0, 2}).str() == "tensor([], size=(0, 2))"),
      OK("str: a 2^32 x 4 expanded view summarizes", !ts::expand(f32({1}), {k2to32, 4}).str().empty()),
  };
}

// ---- running a case in a child --------------------------------------------------------------

// Exit codes of the child for each way a case can go wrong.
enum ChildCode : int {
  kPassed = 0,
  kReturned = 10,       // an error was expected, the op returned
  kWrongResult = 11,    // the op returned a wrong result
  kUnexpectedError = 12,
  kMessageWithoutOp = 13,
  kOtherException = 14,
};

bool names_op(std::string_view message, std::string_view ops) {
  while (!ops.empty()) {
    const size_t bar = ops.find('|');
    if (message.find(ops.substr(0, bar)) != std::string_view::npos) return true;
    ops = bar == std::string_view::npos ? std::string_view{} : ops.substr(bar + 1);
  }
  return false;
}

[[noreturn]] void child(const BadCase& c, int report_fd) {
  alarm(120);  // a hang ends as SIGALRM, reported as a crash of this case
  const auto finish = [&](int code, const std::string& detail) {
    if (!detail.empty()) (void)!write(report_fd, detail.data(), detail.size());
    _exit(code);
  };
  try {
    const bool right = c.body();
    if (c.expect == Expect::error) finish(kReturned, "returned instead of throwing");
    finish(right ? kPassed : kWrongResult, right ? "" : "returned a wrong result");
  } catch (const ts::Error& e) {
    if (c.expect == Expect::result) finish(kUnexpectedError, std::string("threw: ") + e.what());
    if (!names_op(e.what(), c.op)) finish(kMessageWithoutOp, std::string("the message does not name the op: ") + e.what());
    finish(kPassed, "");
  } catch (const std::exception& e) {
    finish(kOtherException, std::string("threw a non-ts::Error: ") + e.what());
  } catch (...) {
    finish(kOtherException, "threw a non-std::exception");
  }
  _exit(kOtherException);  // not reached: every path above exits
}

struct Outcome {
  bool passed = false;
  std::string detail;
};

Outcome run_forked(const BadCase& c) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    child(c, fds[1]);
  }
  close(fds[1]);
  std::string detail;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) detail.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Outcome o;
  if (WIFSIGNALED(status)) {
    o.detail = fmt::format("crashed: signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 86) {
    o.detail = "a sanitizer report (exit 86)";
  } else if (WIFEXITED(status)) {
    o.passed = WEXITSTATUS(status) == kPassed;
    o.detail = detail.empty() ? fmt::format("exit {}", WEXITSTATUS(status)) : detail;
  }
  return o;
}

// Runs a family of cases; returns how many ran.
int run_cases(const std::vector<BadCase>& cases) {
  int ran = 0, expected_failures = 0;
  for (const BadCase& c : cases) {
    if (c.needs_no_gpu && ts::cuda::is_available()) continue;  // only meaningful without a GPU
    ++ran;
    const Outcome o = run_forked(c);
    const std::string* known = expected_failure(c.name);
    if (known == nullptr) {
      CHECK_MESSAGE(o.passed, c.name, ": ", o.detail);
    } else {
      ++expected_failures;
      CHECK_MESSAGE(!o.passed, c.name, ": passes now: take it off the expected-to-fail list (", *known, ")");
      if (!o.passed) MESSAGE("expected to fail (a bug in ops/): ", c.name, ": ", o.detail);
    }
  }
  MESSAGE(ran, " bad-input cases run, ", expected_failures, " of them expected to fail");
  return ran;
}

}  // namespace

TEST_CASE("bad input: factories") { run_cases(factory_cases()); }
TEST_CASE("bad input: copies and conversions") { run_cases(copy_cases()); }
TEST_CASE("bad input: views") { run_cases(view_cases()); }
TEST_CASE("bad input: elementwise") { run_cases(elementwise_cases()); }
TEST_CASE("bad input: softmax, masking, where, triu and tril") { run_cases(softmax_masking_cases()); }
TEST_CASE("bad input: reductions") { run_cases(reduce_cases()); }
TEST_CASE("bad input: matrix products") { run_cases(matmul_cases()); }
TEST_CASE("bad input: geglu and attention") { run_cases(fused_cases()); }
TEST_CASE("bad input: Tensor methods") { run_cases(tensor_cases()); }

TEST_CASE("bad input: every case name is unique and every expected failure names a case") {
  std::map<std::string, int> names;
  for (const auto& family : {factory_cases(), copy_cases(), view_cases(), elementwise_cases(), softmax_masking_cases(),
                             reduce_cases(), matmul_cases(), fused_cases(), tensor_cases()})
    for (const BadCase& c : family) ++names[c.name];
  for (const auto& [name, count] : names) CHECK_MESSAGE(count == 1, name, " appears ", count, " times");
  for (const auto& list : {kExpectedToFail, kExpectedToFailUnderSanitizers})
    for (const auto& [name, why] : list) CHECK_MESSAGE(names.count(name) == 1, name, " is not a case");
  MESSAGE(names.size(), " bad-input cases in all");
}

// Every public op is some case's: its short name is a case's op (an error must name it) or starts a
// case's name ("linear_geglu: ..."). An op added to the registry without a case fails here, naming it.
TEST_CASE("bad input: every registered op has a case") {
  std::vector<BadCase> all;
  for (const auto& family : {factory_cases(), copy_cases(), view_cases(), elementwise_cases(), softmax_masking_cases(),
                             reduce_cases(), matmul_cases(), fused_cases(), tensor_cases()})
    all.insert(all.end(), family.begin(), family.end());
  for (const ts::OpDef* op : ts::all_ops()) {
    const std::string name = op->short_name();
    bool covered = false;
    for (const BadCase& c : all) {
      covered |= c.name.rfind(name + ":", 0) == 0;
      for (size_t at = 0; at <= c.op.size();) {  // "a|b": each alternative
        const size_t bar = std::min(c.op.find('|', at), c.op.size());
        covered |= c.op.substr(at, bar - at) == name;
        at = bar + 1;
      }
    }
    CHECK_MESSAGE(covered, name, ": no bad-input case names it (add one to the family of its folder above)");
  }
}
