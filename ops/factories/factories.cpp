// ops/factories/factories.cpp: empty, zeros/ones/full, arange, rand/randn, and
// tensors from C++ values.
//
// Composition mirrors PyTorch's profile: zeros -> empty + fill_. Random values
// come from a counter-based generator (value i depends only on the seed and
// its position), so the same seed gives the same tensor on every device.
#include <cmath>
#include <vector>

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/variants.h"
#include "tensor/cuda_device.h"

namespace ts {

namespace {

// The global generator: a seed and how many values have been drawn from it.
struct GeneratorState {
  uint64_t seed = 0x5eed;
  uint64_t offset = 0;
};
GeneratorState generator;

void check_shape(const OpCall& call, const Dims& shape) {
  for (int64_t s : shape)
    TS_CHECK(s >= 0, "{}: trying to create tensor with negative dimension {}: {}", op_name(call.op), s, shape);
}

// Allocates call.out with call.shape on call.device.
void prepare_factory(OpCall& call) {
  check_shape(call, call.shape);
  check_device_available(call.device, op_name(call.op));
  call.out = make_contiguous_tensor(call.shape, {call.dtype, call.device});
}

Tensor factory(OpId op, const Dims& shape, Options options, Where loc) {
  OpCall call(op, loc);
  call.shape = shape;
  call.dtype = options.dtype;
  call.device = options.device;
  return dispatch(call, prepare_factory);
}

Tensor random(OpId op, const Dims& shape, Options options, Where loc) {
  OpCall call(op, loc);
  call.shape = shape;
  call.dtype = options.dtype;
  call.device = options.device;
  call.seed = generator.seed;
  call.start = static_cast<int64_t>(generator.offset);
  TS_CHECK(is_floating(options.dtype), "{}: dtype must be floating, got {}", op_name(op),
           dtype_short_name(options.dtype));
  // randn draws two uniforms per value (Box-Muller); keep offsets disjoint either way.
  generator.offset += 2 * static_cast<uint64_t>(numel_of(shape));
  return dispatch(call, prepare_factory);
}

}  // namespace

void manual_seed(uint64_t seed) { generator = {seed, 0}; }

void empty_alloc(OpCall&) {}  // prepare_factory allocated call.out: nothing to compute

Tensor empty(const Dims& shape, Options options, Where loc) { return factory(OpId::empty, shape, options, loc); }

Tensor empty_like(const Tensor& x, Where loc) { return empty(x.shape(), {x.dtype(), x.device()}, loc); }

Tensor full(const Dims& shape, double value, Options options, Where loc) {
  Tensor out = empty(shape, options, loc);
  fill_(out, value, loc);
  return out;
}

Tensor zeros(const Dims& shape, Options options, Where loc) { return full(shape, 0.0, options, loc); }
Tensor ones(const Dims& shape, Options options, Where loc) { return full(shape, 1.0, options, loc); }
Tensor zeros_like(const Tensor& x, Where loc) { return zeros(x.shape(), {x.dtype(), x.device()}, loc); }

Tensor arange(double start, double end, double step, Options options, Where loc) {
  OpCall call(OpId::arange, loc);
  TS_CHECK(step != 0, "arange: step must be nonzero");
  TS_CHECK((end - start) / step >= 0, "arange: upper bound and larger bound inconsistent with step sign ({}, {}, {})",
           start, end, step);
  call.shape = {static_cast<int64_t>(std::ceil((end - start) / step))};
  call.scalar = start;
  call.alpha = step;
  call.dtype = options.dtype;
  call.device = options.device;
  return dispatch(call, prepare_factory);
}

Tensor arange(double end, Options options, Where loc) { return arange(0, end, 1, options, loc); }

Tensor rand(const Dims& shape, Options options, Where loc) { return random(OpId::rand, shape, options, loc); }
Tensor randn(const Dims& shape, Options options, Where loc) { return random(OpId::randn, shape, options, loc); }

// ---- tensors from C++ values --------------------------------------------------

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Dims& shape, Options options) {
  TS_CHECK(static_cast<int64_t>(values.size()) == numel_of(shape),
           "from_vector: {} values cannot fill shape {} ({} elements)", values.size(), shape, numel_of(shape));
  // Build on the host in the requested dtype, then move to the device (one copy).
  Tensor host = make_contiguous_tensor(shape, {options.dtype, kCPU});
  visit_dtype(options.dtype, [&](auto tag) {
    using D = decltype(tag);
    D* p = static_cast<D*>(host.data_ptr());
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<D, bf16> || std::is_same_v<D, f16>) {
        p[i] = D(static_cast<float>(values[i]));
      } else {
        p[i] = static_cast<D>(values[i]);
      }
    }
  });
  return options.device.is_cpu() ? host : to(host, options.device);
}

template Tensor from_vector<float>(const std::vector<float>&, const Dims&, Options);
template Tensor from_vector<double>(const std::vector<double>&, const Dims&, Options);
template Tensor from_vector<int64_t>(const std::vector<int64_t>&, const Dims&, Options);
template Tensor from_vector<int>(const std::vector<int>&, const Dims&, Options);

Tensor tensor(std::initializer_list<double> values, Options options) {
  return from_vector(std::vector<double>(values), {static_cast<int64_t>(values.size())}, options);
}

Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, Options options) {
  std::vector<double> flat;
  const int64_t cols = rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0;
  for (const auto& row : rows) {
    TS_CHECK(static_cast<int64_t>(row.size()) == cols, "tensor: rows have different lengths ({} and {})", cols,
             row.size());
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return from_vector(flat, {static_cast<int64_t>(rows.size()), cols}, options);
}

Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<double>>> blocks, Options options) {
  std::vector<double> flat;
  const int64_t rows = blocks.size() ? static_cast<int64_t>(blocks.begin()->size()) : 0;
  const int64_t cols = rows ? static_cast<int64_t>(blocks.begin()->begin()->size()) : 0;
  for (const auto& block : blocks) {
    TS_CHECK(static_cast<int64_t>(block.size()) == rows, "tensor: blocks have different row counts");
    for (const auto& row : block) {
      TS_CHECK(static_cast<int64_t>(row.size()) == cols, "tensor: rows have different lengths ({} and {})", cols,
               row.size());
      flat.insert(flat.end(), row.begin(), row.end());
    }
  }
  return from_vector(flat, {static_cast<int64_t>(blocks.size()), rows, cols}, options);
}

}  // namespace ts
