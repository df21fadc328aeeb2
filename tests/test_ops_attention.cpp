// tests/test_ops_attention.cpp: scaled_dot_product_attention (no mask, causal, bool mask,
// float mask) against a float64 reference, with every cpu variant of it and of the ops
// its math path calls.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/support/compare.h"
#include "tests/support/reference.h"

using ts::DType;
using ts::Dims;
using ts::Tensor;
using namespace ts::testing;

namespace {

const ts::OpDef* const kSdpaOps[] = {&ts::ops::scaled_dot_product_attention, &ts::ops::mm, &ts::ops::bmm, &ts::ops::_safe_softmax};

struct SdpaShape {
  Dims batch;  // leading dims of q, k, v
  int64_t S, L, D, Dv;
};

const SdpaShape kShapes[] = {
    {{}, 1, 1, 1, 1},           // the smallest
    {{3}, 7, 7, 16, 16},        // [H, S, D]
    {{2, 3}, 13, 13, 8, 8},     // [B, H, S, D], S == L
    {{1, 2}, 7, 31, 16, 5},     // fewer queries than keys (decoding with a cache)
    {{2, 1}, 31, 13, 8, 8},     // more queries than keys
    {{}, 65, 63, 4, 3},         // 2-D q, odd sizes one off a tile
};

Dims with_batch(const Dims& batch, int64_t a, int64_t b) {
  Dims d = batch;
  d.push_back(a);
  d.push_back(b);
  return d;
}

// q, k, v for a shape; `heads_layout` makes them transpose(1, 2) views of a
// [B, S, H, D] projection, as a transformer's attention does.
struct Qkv {
  Tensor q, k, v;
};

Qkv make_qkv(const SdpaShape& s, DType dtype, uint64_t seed, bool heads_layout) {
  if (heads_layout && s.batch.size() == 2) {
    auto heads = [&](int64_t seq, int64_t d, uint64_t sd) {
      return make_input({s.batch[0], seq, s.batch[1], d}, dtype, sd).transpose(1, 2);
    };
    return {heads(s.S, s.D, seed), heads(s.L, s.D, seed + 1), heads(s.L, s.Dv, seed + 2)};
  }
  return {make_input(with_batch(s.batch, s.S, s.D), dtype, seed),
          make_input(with_batch(s.batch, s.L, s.D), dtype, seed + 1, Layout::transposed),
          make_input(with_batch(s.batch, s.L, s.Dv), dtype, seed + 2, Layout::stepped)};
}

Tensor random_bool(const Dims& shape, uint64_t seed, float p_true) {
  ts::manual_seed(seed);
  const std::vector<float> u = ts::rand(shape).to_vector<float>();
  std::vector<int64_t> bits(u.size());
  for (size_t i = 0; i < u.size(); ++i) bits[i] = u[i] < p_true ? 1 : 0;
  return ts::from_vector(bits, shape, DType::b8);
}

}  // namespace

TEST_CASE("sdpa: hand-computed values") {
  // One query, two keys: scores q.k/sqrt(1) = [0, 1]: weights [1/(1+e), e/(1+e)].
  const Tensor q = ts::ones({1, 1});
  const Tensor k = ts::tensor({0, 1}).view({2, 1});
  const Tensor v = ts::tensor({{10, 0}, {0, 10}});
  const double e = std::exp(1.0);
  CHECK_CLOSE(ts::scaled_dot_product_attention(q, k, v), (std::vector<double>{10 / (1 + e), 10 * e / (1 + e)}), 1e-6,
              0);
  // scale overrides 1/sqrt(D): scale 0.5 gives scores [0, 0.5].
  const double h = std::exp(0.5);
  CHECK_CLOSE(ts::scaled_dot_product_attention(q, k, v, {}, false, 0.5),
              (std::vector<double>{10 / (1 + h), 10 * h / (1 + h)}), 1e-6, 0);
  // Causal with S == L: the first query sees only the first key.
  const Tensor q2 = ts::ones({2, 1});
  CHECK_CLOSE(ts::scaled_dot_product_attention(q2, k, v, {}, true),
              (std::vector<double>{10, 0, 10 / (1 + e), 10 * e / (1 + e)}), 1e-6, 0);
  // A bool mask keeps the true keys; a float mask is added to the scores.
  CHECK_CLOSE(ts::scaled_dot_product_attention(q, k, v, ts::tensor({0, 1}, DType::b8)), (std::vector<double>{0, 10}),
              1e-6, 0);
  CHECK_CLOSE(ts::scaled_dot_product_attention(q, k, v, ts::tensor({1, 0})), (std::vector<double>{5, 5}), 1e-6, 0);
}

TEST_CASE("sdpa: causal with S != L keeps key j for query i when j <= i (tril(ones(S, L)))") {
  // q of 2 queries, k of 4 keys, all scores equal: each query averages the values it may see.
  const Tensor q = ts::zeros({2, 3});
  const Tensor k = ts::zeros({4, 3});
  const Tensor v = ts::tensor({1, 2, 3, 4}).view({4, 1});
  // Query 0 sees key 0, query 1 sees keys 0 and 1.
  CHECK_CLOSE(ts::scaled_dot_product_attention(q, k, v, {}, true), (std::vector<double>{1, 1.5}), 1e-6, 0);
  // With more queries than keys the later queries see every key.
  const Tensor q5 = ts::zeros({5, 3});
  CHECK_CLOSE(ts::scaled_dot_product_attention(q5, k, v, {}, true), (std::vector<double>{1, 1.5, 2, 2.5, 2.5}), 1e-6,
              0);
}

TEST_CASE("sdpa: a query whose keys are all masked gives 0, not NaN") {
  const Tensor q = make_input({3, 4}, DType::f32, 1);
  const Tensor k = make_input({5, 4}, DType::f32, 2);
  const Tensor v = make_input({5, 2}, DType::f32, 3);
  Tensor mask = ts::ones({3, 5}, DType::b8);
  Tensor row1 = mask.select(0, 1);
  ts::fill_(row1, 0);
  const std::vector<float> out = ts::scaled_dot_product_attention(q, k, v, mask).to_vector<float>();
  CHECK(out[2] == 0);
  CHECK(out[3] == 0);
  CHECK(std::isfinite(out[0]));
  Tensor float_mask = ts::zeros({3, 5});
  Tensor frow = float_mask.select(0, 2);
  ts::fill_(frow, -INFINITY);
  const std::vector<float> out2 = ts::scaled_dot_product_attention(q, k, v, float_mask).to_vector<float>();
  CHECK(out2[4] == 0);
  CHECK(out2[5] == 0);
}

TEST_CASE("sdpa: every cpu variant against float64: no mask, causal, bool mask, float mask") {
  uint64_t seed = 4000;
  for_each_cpu_variant_combination(kSdpaOps, [&] {
    for (DType dtype : kFloatDTypes)
      for (const SdpaShape& s : kShapes)
        for (bool heads_layout : {false, true})
          for (int mode = 0; mode < 5; ++mode) {
            INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
            INFO("batch ", fmt::format("{}", s.batch), " S L D Dv ", s.S, " ", s.L, " ", s.D, " ", s.Dv);
            CAPTURE(heads_layout);
            CAPTURE(mode);
            const Qkv x = make_qkv(s, dtype, seed += 3, heads_layout);
            const Ref q = ref_of(x.q), k = ref_of(x.k), v = ref_of(x.v);
            Tensor out;
            Ref want;
            if (mode == 0) {  // no mask
              out = ts::scaled_dot_product_attention(x.q, x.k, x.v);
              want = ref_sdpa(q, k, v, nullptr, false, false);
            } else if (mode == 1) {  // causal
              out = ts::scaled_dot_product_attention(x.q, x.k, x.v, {}, true);
              want = ref_sdpa(q, k, v, nullptr, false, true);
            } else if (mode == 2) {  // bool mask [S, L], broadcast over the batch, mostly true
              const Tensor mask = random_bool({s.S, s.L}, ++seed, 0.8f);
              const Ref m = ref_of(mask);
              out = ts::scaled_dot_product_attention(x.q, x.k, x.v, mask);
              want = ref_sdpa(q, k, v, &m, true, false);
            } else if (mode == 3) {  // float mask of the full shape, explicit scale
              const Tensor mask = make_input(with_batch(s.batch, s.S, s.L), dtype, ++seed);
              const Ref m = ref_of(mask);
              out = ts::scaled_dot_product_attention(x.q, x.k, x.v, mask, false, 0.3);
              want = ref_sdpa(q, k, v, &m, false, false, 0.3);
            } else {  // bool mask with a size-1 query dim: one key pattern for every query
              const Tensor mask = random_bool({1, s.L}, ++seed, 0.6f);
              const Ref m = ref_of(mask);
              out = ts::scaled_dot_product_attention(x.q, x.k, x.v, mask);
              want = ref_sdpa(q, k, v, &m, true, false);
            }
            CHECK(out.shape() == want.shape);
            CHECK(out.dtype() == dtype);
            CHECK_CLOSE(out, want.v, tolerance_for(dtype), seed);
          }
  });
}
