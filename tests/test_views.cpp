// tests/test_views.cpp: every view op: shape, strides, offset, shared storage, the
// elements it reads, and when a copy happens instead (reshape, contiguous).
#include <doctest/doctest.h>

#include <vector>

#include "ops/ops.h"

using ts::DType;
using ts::Dims;
using ts::Tensor;

namespace {

// 0, 1, 2, ... in the given shape, contiguous.
Tensor iota(const Dims& shape) { return ts::arange(static_cast<double>(ts::numel_of(shape))).view(shape); }

std::vector<float> values(const Tensor& x) { return x.to_vector<float>(); }

bool same_storage(const Tensor& a, const Tensor& b) { return a.storage().get() == b.storage().get(); }

}  // namespace

TEST_CASE("views: t and transpose swap sizes and strides over the same storage") {
  const Tensor x = iota({3, 2});
  const Tensor xt = x.t();
  CHECK(xt.shape() == Dims{2, 3});
  CHECK(xt.strides() == Dims{1, 2});
  CHECK(xt.offset() == 0);
  CHECK(same_storage(x, xt));
  CHECK_FALSE(xt.is_contiguous());
  CHECK(values(xt) == std::vector<float>{0, 2, 4, 1, 3, 5});
  CHECK(values(xt.t()) == values(x));
  CHECK(xt.t().strides() == x.strides());
  // t() of 1-D and 0-D tensors is the identity, as in PyTorch.
  CHECK(ts::t(iota({4})).shape() == Dims{4});
  CHECK(ts::t(ts::full({}, 1)).dim() == 0);

  const Tensor y = iota({2, 3, 4});
  const Tensor yt = y.transpose(0, 2);
  CHECK(yt.shape() == Dims{4, 3, 2});
  CHECK(yt.strides() == Dims{1, 4, 12});
  CHECK(same_storage(y, yt));
  CHECK(yt[3][1][1].item<float>() == 1 * 12 + 1 * 4 + 3);
  CHECK(y.transpose(-1, -2).strides() == Dims{12, 1, 4});
  CHECK(y.transpose(1, 1).strides() == y.strides());
}

TEST_CASE("views: permute reorders sizes and strides") {
  const Tensor x = iota({2, 3, 4});
  const Tensor p = x.permute({2, 0, 1});
  CHECK(p.shape() == Dims{4, 2, 3});
  CHECK(p.strides() == Dims{1, 12, 4});
  CHECK(same_storage(x, p));
  CHECK(p[3][1][2].item<float>() == 1 * 12 + 2 * 4 + 3);
  CHECK(x.permute({-1, -3, -2}).shape() == Dims{4, 2, 3});
  CHECK(x.permute({0, 1, 2}).is_contiguous());
}

TEST_CASE("views: view shares storage and computes strides like PyTorch") {
  const Tensor x = iota({4, 6});
  const Tensor v = x.view({2, 2, 6});
  CHECK(same_storage(x, v));
  CHECK(v.strides() == Dims{12, 6, 1});
  CHECK(x.view({-1}).shape() == Dims{24});
  CHECK(x.view({3, -1}).shape() == Dims{3, 8});
  CHECK(x.view({1, 24, 1}).strides() == Dims{24, 1, 1});
  CHECK(values(x.view({24})) == values(x));

  // A view of a non-contiguous tensor works where dims that stay together were contiguous with each other.
  const Tensor xt = iota({2, 3, 4}).transpose(0, 1);  // [3, 2, 4], strides [4, 12, 1]
  const Tensor split = xt.view({3, 2, 2, 2});         // splitting the contiguous last dim is fine
  CHECK(split.strides() == Dims{4, 12, 2, 1});
  CHECK(same_storage(xt, split));
  CHECK(values(split) == values(xt));
  // Rows 0 and 2 of a [4, 6] tensor: each row is contiguous, the two are not adjacent.
  const Tensor rows = iota({4, 6}).slice(0, 0, 4, 2);
  CHECK(rows.view({2, 3, 2}).strides() == Dims{12, 2, 1});
  CHECK_THROWS_AS(rows.view({12}), ts::Error);
}

TEST_CASE("views: view of a transposed tensor fails like PyTorch, reshape copies instead") {
  const Tensor x = iota({3, 4});
  const Tensor xt = x.t();
  CHECK_THROWS_WITH_AS(xt.view({12}), doctest::Contains("view size is not compatible with input tensor's size and stride"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(xt.view({12}), doctest::Contains("Use .reshape(...) instead"), ts::Error);
  // view() can still split or keep dims that do not cross the transposition.
  CHECK(same_storage(xt.view({2, 2, 3}), x));
  CHECK(xt.view({2, 2, 3}).strides() == Dims{2, 1, 4});

  // reshape: a view when the strides allow...
  const Tensor r_view = x.reshape({2, 6});
  CHECK(same_storage(r_view, x));
  CHECK(r_view.strides() == Dims{6, 1});
  const Tensor r_view_t = xt.reshape({2, 2, 3});
  CHECK(same_storage(r_view_t, x));
  // ...a copy when they do not, with the same elements in row-major order.
  const Tensor r_copy = xt.reshape({12});
  CHECK_FALSE(same_storage(r_copy, x));
  CHECK(r_copy.is_contiguous());
  CHECK(values(r_copy) == values(xt));
  CHECK(values(x.narrow(1, 0, 3).reshape({-1})) == std::vector<float>{0, 1, 2, 4, 5, 6, 8, 9, 10});
  CHECK_FALSE(same_storage(x.narrow(1, 0, 3).reshape({-1}), x));
  // Every other column of a 4-wide matrix is evenly spaced in memory: a view (stride 2), as in PyTorch.
  const Tensor every_other = x.slice(1, 0, 4, 2).reshape({-1});
  CHECK(same_storage(every_other, x));
  CHECK(every_other.strides() == Dims{2});
  CHECK(values(every_other) == std::vector<float>{0, 2, 4, 6, 8, 10});
  CHECK(same_storage(x.slice(0, 0, 3, 2).reshape({2, 2, 2}), x));  // rows 0 and 2: each row stays contiguous
}

TEST_CASE("views: view and reshape of expanded (stride-0) tensors") {
  const Tensor e = ts::tensor({1, 2, 3, 4}).expand({3, 4});  // strides [0, 1]
  const Tensor split = e.view({3, 2, 2});                     // the broadcast dim stays a stride-0 dim
  CHECK(split.strides() == Dims{0, 2, 1});
  CHECK(same_storage(split, e));
  CHECK_THROWS_AS(e.view({12}), ts::Error);  // merging it with the next dim is impossible
  const Tensor flat = e.reshape({12});
  CHECK_FALSE(same_storage(flat, e));
  CHECK(values(flat) == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});
  CHECK(same_storage(e.reshape({3, 4, 1}), e));
}

TEST_CASE("views: a view of any strided layout reads the same elements as a reshaping copy") {
  // Layouts: permutations, steps, narrows and size-1 dims of a 2x3x4 (or 6x4) tensor; targets:
  // every way to write the element count as up to three factors. Whenever view() succeeds
  // it must read exactly the row-major elements (what reshape of a contiguous copy reads).
  const Tensor base = iota({2, 3, 4});
  const Tensor layouts[] = {
      base,
      base.permute({1, 0, 2}),
      base.permute({2, 1, 0}),
      base.transpose(1, 2),
      base.slice(2, 0, 4, 2),
      base.narrow(1, 1, 2),
      base.select(0, 1).t(),
      base.unsqueeze(1).transpose(0, 1),
      base.view({6, 4}).slice(0, 0, 6, 3),
      base.view({6, 4}).t().narrow(0, 1, 2),
      base.slice(0, 1, 2).permute({2, 0, 1}),
  };
  int views = 0, refusals = 0;
  for (const Tensor& x : layouts) {
    const int64_t n = x.numel();
    const std::vector<float> want = values(x);
    for (int64_t a = 1; a <= n; ++a)
      for (int64_t b = 1; a * b <= n; ++b) {
        if (n % (a * b) != 0) continue;
        const Dims target{a, b, n / (a * b)};
        INFO("shape ", fmt::format("{}", x.shape()), " strides ", fmt::format("{}", x.strides()), " -> ",
             fmt::format("{}", target));
        CHECK(values(x.reshape(target)) == want);
        try {
          const Tensor v = x.view(target);
          CHECK(same_storage(v, x));
          CHECK(values(v) == want);
          ++views;
        } catch (const ts::Error&) {
          CHECK_FALSE(x.is_contiguous());  // a contiguous tensor can always be viewed
          ++refusals;
        }
      }
  }
  CHECK(views > 0);
  CHECK(refusals > 0);
}

TEST_CASE("views: unsqueeze and squeeze") {
  const Tensor x = iota({3, 4});
  const Tensor u0 = x.unsqueeze(0);
  CHECK(u0.shape() == Dims{1, 3, 4});
  CHECK(u0.strides() == Dims{12, 4, 1});
  CHECK(u0.is_contiguous());
  CHECK(same_storage(u0, x));
  CHECK(x.unsqueeze(1).shape() == Dims{3, 1, 4});
  CHECK(x.unsqueeze(1).strides() == Dims{4, 4, 1});
  CHECK(x.unsqueeze(-1).shape() == Dims{3, 4, 1});
  CHECK(x.unsqueeze(-1).strides() == Dims{4, 1, 1});
  CHECK(x.t().unsqueeze(1).strides() == Dims{1, 12, 4});
  CHECK(ts::full({}, 1).unsqueeze(0).shape() == Dims{1});

  const Tensor y = iota({1, 3, 1, 2});
  CHECK(y.squeeze().shape() == Dims{3, 2});
  CHECK(y.squeeze().strides() == Dims{2, 1});
  CHECK(y.squeeze(2).shape() == Dims{1, 3, 2});
  CHECK(y.squeeze(-4).shape() == Dims{3, 1, 2});
  CHECK(y.squeeze(1).shape() == y.shape());  // not size 1: unchanged, as in PyTorch
  CHECK(same_storage(y.squeeze(), y));
  CHECK(ts::ones({1, 1}).squeeze().dim() == 0);
}

TEST_CASE("views: expand broadcasts with stride 0") {
  const Tensor x = iota({3, 1});
  const Tensor e = x.expand({2, 3, 4});
  CHECK(e.shape() == Dims{2, 3, 4});
  CHECK(e.strides() == Dims{0, 1, 0});
  CHECK(same_storage(e, x));
  CHECK_FALSE(e.is_contiguous());
  CHECK(values(e[1][2]) == std::vector<float>{2, 2, 2, 2});
  CHECK(x.expand({-1, 5}).shape() == Dims{3, 5});
  CHECK(x.expand({3, 1}).strides() == x.strides());
  const Tensor row = ts::tensor({10, 20});
  CHECK(values(row.expand({3, 2})) == std::vector<float>{10, 20, 10, 20, 10, 20});
  CHECK(values(ts::full({}, 4).expand({2, 2})) == std::vector<float>{4, 4, 4, 4});
}

TEST_CASE("views: narrow, slice (with step and negative bounds), select") {
  const Tensor x = iota({4, 5});
  const Tensor n = x.narrow(1, 1, 3);
  CHECK(n.shape() == Dims{4, 3});
  CHECK(n.strides() == Dims{5, 1});
  CHECK(n.offset() == 1);
  CHECK(same_storage(n, x));
  CHECK(values(n[2]) == std::vector<float>{11, 12, 13});
  CHECK(x.narrow(0, -2, 2).offset() == 10);
  CHECK(x.narrow(0, 4, 0).numel() == 0);

  const Tensor s = x.slice(1, 1, 5, 2);  // x[:, 1:5:2]
  CHECK(s.shape() == Dims{4, 2});
  CHECK(s.strides() == Dims{5, 2});
  CHECK(s.offset() == 1);
  CHECK(values(s[3]) == std::vector<float>{16, 18});
  CHECK(x.slice(1, 0, 5, 3).shape() == Dims{4, 2});          // 0, 3
  CHECK(values(x.slice(1, -3, -1)[0]) == std::vector<float>{2, 3});  // x[0, -3:-1]
  CHECK(x.slice(1, -100, 100).shape() == Dims{4, 5});        // clamped like Python
  CHECK(x.slice(1, 4, 2).shape() == Dims{4, 0});             // empty when end <= start
  CHECK(values(x.slice(0, 1, 4, 2).slice(1, 0, 5, 4)) == std::vector<float>{5, 9, 15, 19});
  CHECK(values(x.slice(0, -1, 100)) == std::vector<float>{15, 16, 17, 18, 19});

  const Tensor c = x.select(1, 2);
  CHECK(c.shape() == Dims{4});
  CHECK(c.strides() == Dims{5});
  CHECK(c.offset() == 2);
  CHECK(values(c) == std::vector<float>{2, 7, 12, 17});
  CHECK(x.select(0, -1).offset() == 15);
  CHECK(x.select(1, -1)[3].item<float>() == 19);
  CHECK(x[2][3].dim() == 0);
  CHECK(same_storage(x[2][3], x));
}

TEST_CASE("views: as_strided reads any layout inside the storage") {
  const Tensor x = iota({10});
  const Tensor w = x.as_strided({4, 3}, {2, 1}, 1);  // overlapping sliding windows
  CHECK(same_storage(w, x));
  CHECK(w.offset() == 1);
  CHECK(values(w) == std::vector<float>{1, 2, 3, 3, 4, 5, 5, 6, 7, 7, 8, 9});
  CHECK(values(x.as_strided({2, 2}, {1, 2}, 0)) == std::vector<float>{0, 2, 1, 3});
  CHECK(values(x.as_strided({3}, {0}, 9)) == std::vector<float>{9, 9, 9});
  CHECK(x.as_strided({0, 5}, {100, 100}, 10).numel() == 0);
  // Offsets are absolute in the storage, not relative to a view.
  CHECK(x.narrow(0, 5, 5).as_strided({2}, {1}, 0).to_vector<float>() == std::vector<float>{0, 1});
}

TEST_CASE("views: contiguous returns itself or a row-major copy") {
  const Tensor x = iota({3, 4});
  CHECK(same_storage(x.contiguous(), x));
  const Tensor xt = x.t();
  const Tensor c = xt.contiguous();
  CHECK_FALSE(same_storage(c, x));
  CHECK(c.is_contiguous());
  CHECK(c.strides() == Dims{3, 1});
  CHECK(values(c) == values(xt));
  const Tensor e = ts::tensor({1, 2}).expand({3, 2}).contiguous();
  CHECK(e.strides() == Dims{2, 1});
  CHECK(values(e) == std::vector<float>{1, 2, 1, 2, 1, 2});
  // clone always copies, keeping dtype.
  const Tensor h = x.to(DType::f16);
  CHECK_FALSE(same_storage(h.clone(), h));
  CHECK(h.clone().dtype() == DType::f16);
}

TEST_CASE("views: a write through a view shows in every view of the storage") {
  Tensor x = ts::zeros({3, 4});
  Tensor col = x.select(1, 2);
  ts::fill_(col, 7);
  Tensor block = x.t().narrow(0, 0, 2).narrow(1, 1, 2);  // x[1:3, 0:2] seen transposed
  ts::fill_(block, 1);
  CHECK(values(x) == std::vector<float>{0, 0, 7, 0, 1, 1, 7, 0, 1, 1, 7, 0});
}
