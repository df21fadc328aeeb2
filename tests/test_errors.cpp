// tests/test_errors.cpp: user mistakes throw ts::Error naming the op, the shapes and what
// was expected, and a variant forced by name that cannot run says why.
#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>

#include "ops/copy/copy.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "tensor/allocator.h"
#include "tensor/cuda_device.h"
#include "tensor/storage.h"

using doctest::Contains;
using ts::DType;
using ts::Tensor;

namespace {

// Host memory that says it lives on cuda:0: lets a test build a tensor whose
// device() is a GPU on a machine without one. Nothing ever reads the bytes.
class PretendCudaAllocator final : public ts::Allocator {
 public:
  void* allocate(size_t nbytes, ts::Device) override { return std::malloc(nbytes ? nbytes : 1); }
  void deallocate(void* ptr, size_t, ts::Device) override { std::free(ptr); }
  ts::AllocatorStats stats(ts::Device) const override { return {}; }
};

// A 2-element f32 tensor "on cuda:0" (host bytes); the CUDA allocator slot is restored before returning.
Tensor pretend_cuda_tensor() {
  static PretendCudaAllocator pretend;  // outlives every storage it hands out
  ts::Allocator* previous = nullptr;
  try {
    previous = &ts::allocator_for(ts::kCUDA);
  } catch (const ts::Error&) {
  }
  ts::set_allocator(ts::DeviceType::cuda, &pretend);
  auto storage = std::make_shared<ts::Storage>(8, ts::kCUDA);
  ts::set_allocator(ts::DeviceType::cuda, previous);
  return Tensor(std::move(storage), {2}, {1}, 0, DType::f32);
}

}  // namespace

TEST_CASE("errors: mm shape mismatch names both shapes like PyTorch") {
  CHECK_THROWS_WITH_AS(ts::mm(ts::zeros({64, 32}), ts::zeros({64, 64})),
                       "mm: mat1 and mat2 shapes cannot be multiplied (64x32 and 64x64)", ts::Error);
  CHECK_THROWS_WITH_AS(ts::mm(ts::zeros({2, 3, 4}), ts::zeros({4, 5})), Contains("mm: mat1 must be a matrix"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::mm(ts::zeros({2, 3}), ts::zeros({3, 4}, DType::bf16)),
                       Contains("ts::mm: expected both inputs to have the same dtype, got f32 [2, 3] and bf16 [3, 4]"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::addmm(ts::zeros({3}), ts::zeros({2, 5}), ts::zeros({4, 3})),
                       Contains("addmm: mat1 and mat2 shapes cannot be multiplied (2x5 and 4x3)"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::addmm(ts::zeros({2, 4}), ts::zeros({2, 5}), ts::zeros({5, 3})),
                       Contains("[2, 4] and [2, 3] cannot be broadcast"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::matmul(ts::zeros({2, 3, 4}), ts::zeros({5, 6})),
                       Contains("matmul: shapes [2, 3, 4] and [5, 6] cannot be multiplied"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::matmul(ts::zeros({2, 3, 4}), ts::zeros({3, 4, 6})),
                       Contains("[2] and [3] cannot be broadcast"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::matmul(ts::full({}, 1), ts::zeros({3})),
                       Contains("matmul: both arguments need at least 1 dimension, got shapes [] and [3]"), ts::Error);
}

TEST_CASE("errors: bmm batch and size mismatches") {
  CHECK_THROWS_WITH_AS(ts::bmm(ts::zeros({2, 3, 4}), ts::zeros({3, 4, 5})),
                       Contains("bmm: batch1 and batch2 must have the same number of batches, got 2 and 3"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::bmm(ts::zeros({2, 3, 4}), ts::zeros({3, 4, 5})), Contains("[2, 3, 4]"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::bmm(ts::zeros({2, 3, 4}), ts::zeros({3, 4, 5})), Contains("[3, 4, 5]"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::bmm(ts::zeros({2, 3, 4}), ts::zeros({2, 5, 6})),
                       Contains("(batch1 [2, 3, 4], batch2 [2, 5, 6])"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::bmm(ts::zeros({3, 4}), ts::zeros({2, 4, 5})), Contains("bmm: batch1 must be a 3D tensor"),
                       ts::Error);
}

TEST_CASE("errors: broadcast failure and dtype mismatch in elementwise ops") {
  CHECK_THROWS_WITH_AS(ts::add(ts::zeros({2, 3}), ts::zeros({4})),
                       Contains("ts::add: shapes [2, 3] and [4] cannot be broadcast together"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::mul(ts::zeros({5, 1, 3}), ts::zeros({4, 2})),
                       Contains("ts::mul: shapes [5, 1, 3] and [4, 2] cannot be broadcast together (dim -1: 3 vs 2)"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::add(ts::zeros({2}), ts::zeros({2}, DType::bf16)),
                       Contains("ts::add: expected both inputs to have the same dtype, got f32 [2] and bf16 [2]"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::exp(ts::zeros({3}, DType::i64)),
                       Contains("ts::exp: input must be a floating tensor (f32, bf16 or f16), got i64 with shape [3]"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::where(ts::zeros({2}), ts::zeros({2}), ts::zeros({2})),
                       Contains("where: expected a bool condition, got f32 (shape [2])"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::masked_fill(ts::zeros({2, 3}), ts::zeros({2, 3}), 1),
                       Contains("ts::masked_fill: expected a bool mask, got f32 (mask shape [2, 3])"), ts::Error);
  Tensor row = ts::zeros({3});
  CHECK_THROWS_WITH_AS(ts::masked_fill_(row, ts::ones({2, 3}, DType::b8), 1),
                       Contains("ts::masked_fill_: the mask of shape [2, 3] cannot be broadcast to the input's shape [3]"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::masked_fill(ts::zeros({2, 3}), ts::ones({4}, DType::b8), 1),
                       Contains("ts::masked_fill: shapes [2, 3] and [4] cannot be broadcast together"), ts::Error);
  Tensor dst = ts::zeros({2, 3});
  CHECK_THROWS_WITH_AS(ts::copy_(dst, ts::zeros({3, 3})), Contains("ts::copy_: shapes [2, 3] and [3, 3]"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::copy_(dst, ts::zeros({2, 2, 3})),
                       Contains("copy_: the source of shape [2, 2, 3] cannot be broadcast to the destination's shape "
                                "[2, 3]"),
                       ts::Error);
}

TEST_CASE("errors: dim out of range") {
  const Tensor x = ts::zeros({2, 3});
  CHECK_THROWS_WITH_AS(ts::softmax(x, 2),
                       Contains("ts::softmax: dimension out of range (expected to be in range of [-2, 1], but got 2)"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::sum(x, -3), Contains("ts::sum: dimension out of range"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::max(x, 5), Contains("ts::max: dimension out of range"), ts::Error);
  CHECK_THROWS_WITH_AS(x.transpose(0, 2), Contains("transpose: dimension out of range"), ts::Error);
  CHECK_THROWS_WITH_AS(x.unsqueeze(4), Contains("unsqueeze: dimension out of range"), ts::Error);
  CHECK_THROWS_WITH_AS(x.squeeze(2), Contains("squeeze: dimension out of range"), ts::Error);
  CHECK_THROWS_WITH_AS(x.select(-3, 0), Contains("select: dimension out of range"), ts::Error);
  CHECK_THROWS_WITH_AS(x.size(2), Contains("dimension out of range"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::max(ts::zeros({2, 0}), 1), Contains("max: expected reduction dim 1 to have non-zero size"),
                       ts::Error);
}

TEST_CASE("errors: impossible views") {
  const Tensor x = ts::zeros({3, 4});
  CHECK_THROWS_WITH_AS(x.t().view({12}),
                       Contains("view: view size is not compatible with input tensor's size and stride"), ts::Error);
  CHECK_THROWS_WITH_AS(x.t().view({12}), Contains("Input shape [4, 3] strides [1, 4], requested shape [12]"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(x.view({5, -1}), Contains("view: shape '[5, -1]' is invalid for input of size 12"), ts::Error);
  CHECK_THROWS_WITH_AS(x.view({-1, -1}), Contains("view: only one dimension can be inferred"), ts::Error);
  CHECK_THROWS_WITH_AS(x.reshape({7}), Contains("reshape: shape '[7]' is invalid for input of size 12"), ts::Error);
  CHECK_THROWS_WITH_AS(x.expand({4, 4}),
                       Contains("expand: the expanded size of the tensor (4) must match the existing size (3) at "
                                "non-singleton dimension 0. Target sizes: [4, 4]. Tensor sizes: [3, 4]"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(x.expand({4}), Contains("expand: the number of sizes provided (1) must be greater or equal"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(x.select(1, 4), Contains("select: index 4 out of range for tensor of size [3, 4] at dimension 1"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(x.select(0, -4), Contains("select: index -4 out of range"), ts::Error);
  CHECK_THROWS_WITH_AS(x.narrow(1, 2, 3),
                       Contains("narrow: start (2) + length (3) exceeds dimension size (4) of dim 1 (shape [3, 4])"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(x.narrow(0, 5, 0), Contains("narrow: start (5) out of range for dimension 0 of size 3"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(x.slice(0, 0, 2, 0), Contains("slice: step must be positive, got 0"), ts::Error);
  CHECK(x.as_strided({2, 2}, {4, 1}, 6).numel() == 4);  // the last element, 11, is the storage's last
  CHECK_THROWS_WITH_AS(x.as_strided({2, 2}, {4, 1}, 8),
                       Contains("as_strided: sizes [2, 2], strides [4, 1], storage offset 8 and itemsize 4 require a "
                                "storage of 56 bytes, but the storage holds 48 bytes"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(x.as_strided({2, 2}, {4, 1}, 7), Contains("require a storage of 52 bytes"), ts::Error);
  CHECK_THROWS_WITH_AS(x.as_strided({2}, {1, 1}, 0), Contains("as_strided: mismatch in length of strides"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::zeros({2, 3, 4}).t(), Contains("t() expects a tensor with <= 2 dimensions, but self is 3D"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(x.permute({0}), Contains("permute: number of dims don't match"), ts::Error);
  CHECK_THROWS_WITH_AS(x.permute({1, 1}), Contains("permute: repeated dim 1"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::full({}, 1).select(0, 0), Contains("select() cannot be applied to a 0-dim tensor"),
                       ts::Error);
}

TEST_CASE("errors: linear, attention and factory mistakes") {
  CHECK_THROWS_WITH_AS(ts::linear(ts::zeros({5, 7}), ts::zeros({3, 8})),
                       Contains("linear: x has 7 features but weight expects 8 (x: [5, 7], weight: [3, 8])"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::linear(ts::zeros({5, 8}), ts::zeros({3, 8}), ts::zeros({4})),
                       Contains("linear: bias must be [out_features] = [3], got shape [4]"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::linear(ts::zeros({5, 8}), ts::zeros({8})),
                       Contains("linear: weight must be [out_features, in_features], got shape [8]"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::scaled_dot_product_attention(ts::zeros({2, 4, 8}), ts::zeros({2, 5, 7}), ts::zeros({2, 5, 8})),
                       Contains("scaled_dot_product_attention: q and k must share the head dim, got q [2, 4, 8] and "
                                "k [2, 5, 7]"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::scaled_dot_product_attention(ts::zeros({4, 8}), ts::zeros({5, 8}), ts::zeros({6, 8})),
                       Contains("k and v must have the same sequence length, got k [5, 8] and v [6, 8]"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::scaled_dot_product_attention(ts::zeros({4, 8}), ts::zeros({5, 8}), ts::zeros({5, 8}),
                                                        ts::ones({4, 5}, DType::b8), true),
                       Contains("pass either attn_mask or is_causal=true, not both"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::scaled_dot_product_attention(ts::zeros({4, 8}, DType::bf16), ts::zeros({5, 8}, DType::bf16),
                                                        ts::zeros({5, 8}, DType::bf16), ts::zeros({4, 5})),
                       Contains("attn_mask must be bool or bf16 like q, got f32"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::where(ts::ones({2}, DType::b8), ts::zeros({2}), ts::zeros({2}, DType::f16)),
                       Contains("ts::where: expected both inputs to have the same dtype, got f32 [2] and f16 [2]"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::zeros({2, -3}), Contains("trying to create tensor with negative dimension -3: [2, -3]"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::zeros({2, 3}).item<float>(),
                       Contains("item: a Tensor with 6 elements cannot be converted to a scalar"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::parse_dtype("f8"), Contains("unknown dtype 'f8'"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::Device::parse("tpu"), Contains("unknown device 'tpu'"), ts::Error);
}

TEST_CASE("errors: asking for a cuda tensor without a GPU names cuda") {
  if (ts::cuda::is_available()) {
    MESSAGE("a CUDA device is available: the no-GPU error path cannot be exercised here");
    return;
  }
  CHECK_THROWS_WITH_AS(ts::empty({2}, ts::kCUDA), Contains("cuda"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::empty({2}, ts::kCUDA), Contains("ts::empty: cannot use cuda:0"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::zeros({2}, ts::kCUDA), Contains("cuda"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::ones({2}).to(ts::kCUDA), Contains("to: cannot use cuda:0"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::rand({2}, {DType::f32, ts::kCUDA}), Contains("cuda"), ts::Error);
}

TEST_CASE("errors: VariantOverride with an unknown variant name") {
  CHECK_THROWS_WITH_AS(ts::VariantOverride("mm/cpu/fast"), Contains("VariantOverride: unknown variant 'mm/cpu/fast'"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::VariantOverride("mm"), Contains("unknown variant 'mm'"), ts::Error);
  // A failed construction leaves no override behind.
  CHECK(ts::mm(ts::ones({1, 1}), ts::ones({1, 1})).item<float>() == 1);
}

TEST_CASE("errors: a variant forced by name that cannot run the call says why") {
  // copy_/cpu/ref copies host to host; a copy whose source claims to be on a GPU is
  // beyond it. Selection for a cpu call with such an input must refuse, not fall back.
  const Tensor src = pretend_cuda_tensor();
  const Tensor dst = ts::zeros({2});
  const ts::NoAttrs attrs;
  ts::OpCall call(ts::ops::copy_, attrs, ts::Where::current(), {&dst, &src});
  call.device = ts::kCPU;
  {
    ts::VariantOverride use("copy_/cpu/ref");
    CHECK_THROWS_WITH_AS(ts::select_variant(call),
                         "ts::copy_: variant copy_/cpu/ref (chosen by VariantOverride) cannot run this call: copies "
                         "host to host only (dst on cpu, src on cuda:0)",
                         ts::Error);
  }
  setenv("TS_VARIANT", "copy_/cpu/ref", 1);
  ts::reload_variant_environment();
  CHECK_THROWS_WITH_AS(ts::select_variant(call), Contains("(chosen by TS_VARIANT) cannot run this call: copies host"),
                       ts::Error);
  unsetenv("TS_VARIANT");
  ts::reload_variant_environment();
  // With nothing forced, selection lists every candidate's objection.
  CHECK_THROWS_WITH_AS(ts::select_variant(call), Contains("ts::copy_: no variant runs on cpu for these inputs"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::select_variant(call), Contains("copy_/cpu/ref: copies host to host only"), ts::Error);
}
