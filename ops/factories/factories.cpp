// ops/factories/factories.cpp: empty, zeros/ones/full, arange, rand/randn, and
// tensors from C++ values.
//
// Composition mirrors PyTorch's profile: zeros -> empty + fill_. Random values
// come from a counter-based generator (value i depends only on the seed and
// its position), so the same seed gives the same tensor on every device.
#include "ops/factories/factories.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/int_conversion.h"
#include "tensor/cuda_device.h"

namespace ts {

namespace {

// The global generator: a seed and how many values have been drawn from it. One lock guards it, as
// PyTorch's default generator has one: threads drawing at once each get values of their own (two
// draws never share an offset), in the order they take the lock.
struct GeneratorState {
  uint64_t seed = 0x5eed;
  uint64_t offset = 0;
};
GeneratorState generator;
std::mutex generator_mutex;

// Allocates call.out of `shape` on the options' device.
void allocate(OpCall& call, const Dims& shape, Options options) {
  for (int64_t s : shape)
    TS_CHECK(s >= 0, "{}: trying to create tensor with negative dimension {}: {}", call.op.name, s, shape);
  check_device_available(options.device, call.op.name);
  call.device = options.device;
  call.out = make_contiguous_tensor(shape, options, call.op.name);
}

void prepare_empty(OpCall& call) {
  const auto& attrs = call.attrs<FactoryAttrs>();
  allocate(call, attrs.shape, attrs.options);
}

void prepare_arange(OpCall& call) {
  const auto& attrs = call.attrs<ArangeAttrs>();
  // Integer bounds give int64 values by construction: each lies between start and end.
  if (!attrs.integer && attrs.options.dtype == DType::i64 && attrs.length > 0) {  // first and last must be int64s
    const double last = attrs.start + static_cast<double>(attrs.length - 1) * attrs.step;
    TS_CHECK(fits_int64(attrs.start) && fits_int64(last),
             "{}: the values {} to {} cannot be converted to type int64_t without overflow", call.op.name,
             attrs.start, last);
    // The values are start + i * step, computed in double: exact while they stay within 2^53, and past
    // it while start and step are multiples of the spacing of doubles there (2^53 + 1 is no double).
    // Otherwise the op refuses rather than return neighbours or repeats.
    const double widest = std::max({std::fabs(attrs.start), std::fabs(last), std::fabs(last - attrs.start)});
    const double spacing = widest > 9007199254740992.0 ? widest - std::nextafter(widest, 0.0) : 1.0;
    const bool on_the_grid = std::fmod(attrs.start, spacing) == 0 && std::fmod(attrs.step, spacing) == 0;
    TS_CHECK(widest <= 9007199254740992.0 || on_the_grid,
             "{}: int64 values up to {} are doubles {} apart: start {} and step {} must be multiples of {} to be "
             "computed exactly (past 2^53 = 9007199254740992); integer bounds are exact at any magnitude",
             call.op.name, widest, spacing, attrs.start, attrs.step, spacing);
  }
  allocate(call, {attrs.length}, attrs.options);
}

void prepare_random(OpCall& call) {
  const auto& attrs = call.attrs<RandomAttrs>();
  TS_CHECK(is_floating(attrs.options.dtype), "{}: dtype must be floating, got {}", call.op.name,
           dtype_short_name(attrs.options.dtype));
  allocate(call, attrs.shape, attrs.options);
}

void prepare_fill(OpCall& call) {
  check_inputs_on_one_device(call);
  check_fill_value(call.op.name, call.attrs<FillAttrs>().value, call.input(0).dtype(), call.input(0).shape());
  check_no_internal_overlap(call, call.input(0));
  call.out = call.input(0);  // in place: the result is the input
}

// Every element written once.
Cost write_cost(const OpCall& call) {
  return {0, static_cast<double>(call.out.numel()) * static_cast<double>(call.out.element_size())};
}

// fill_(self, value) records its value after the tensor.
void fill_scalars(const OpCall& call, std::vector<double>& out) { out.push_back(call.attrs<FillAttrs>().value); }

Tensor random(const OpDef& op, const Dims& shape, Options options, Where loc) {
  const std::lock_guard lock(generator_mutex);
  const RandomAttrs attrs{.shape = shape, .options = options, .seed = generator.seed, .offset = generator.offset};
  OpCall call(op, attrs, loc);
  Tensor out = dispatch(call);
  // randn draws two uniforms per value (Box-Muller); keep offsets disjoint either way.
  generator.offset += 2 * static_cast<uint64_t>(out.numel());
  return out;
}

using enum VariantDevice;

// clang-format off
const Variant empty_rungs[] = {
  {"empty/any/alloc",     &ops::empty,  any,  0, no_gpu, "allocation only: the caching/aligned allocator, no kernel", nullptr, run_kernel<&empty_alloc>, "ops/factories/factories.cpp"},
};
const Variant fill__rungs[] = {
  {"fill_/cpu/ref",       &ops::fill_,  cpu,  0, no_gpu, "one loop over the (strided) elements",                     nullptr,                  run_kernel<&fill_cpu_ref>, "ops/factories/factories_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"fill_/cuda/strided",  &ops::fill_,  cuda, 1, sm75,   "one thread per element; any view through OffsetCalc",     nullptr,                  run_kernel<&fill_cuda_strided>, "ops/factories/factories_cuda_naive.cu"},
  {"fill_/cuda/dense",    &ops::fill_,  cuda, 2, sm75,   "a contiguous tensor: element i at offset i, no index math", fill_cuda_dense_supports, run_kernel<&fill_cuda_dense>, "ops/factories/factories_cuda_naive.cu"},
#endif
};
const Variant arange_rungs[] = {
  {"arange/cpu/ref",      &ops::arange, cpu,  0, no_gpu, "start + i*step",                                          nullptr, run_kernel<&arange_cpu_ref>, "ops/factories/factories_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"arange/cuda/naive",   &ops::arange, cuda, 1, sm75,   "one thread per element, start + i*step in double or int64", nullptr, run_kernel<&arange_cuda_naive>, "ops/factories/factories_cuda_naive.cu"},
#endif
};
const Variant rand_rungs[] = {
  {"rand/cpu/ref",        &ops::rand,   cpu,  0, no_gpu, "uniform [0,1) from the counter-based generator",          nullptr, run_kernel<&rand_cpu_ref>, "ops/factories/factories_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"rand/cuda/naive",     &ops::rand,   cuda, 1, sm75,   "the CPU's splitmix64 counter hash, one thread per element", nullptr, run_kernel<&rand_cuda_naive>, "ops/factories/factories_cuda_naive.cu"},
#endif
};
const Variant randn_rungs[] = {
  {"randn/cpu/ref",       &ops::randn,  cpu,  0, no_gpu, "standard normal (Box-Muller) from the counter-based generator", nullptr, run_kernel<&randn_cpu_ref>, "ops/factories/factories_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"randn/cuda/naive",    &ops::randn,  cuda, 1, sm75,   "the CPU's Box-Muller on the same counters",               nullptr, run_kernel<&randn_cuda_naive>, "ops/factories/factories_cuda_naive.cu"},
#endif
};
// clang-format on

}  // namespace

namespace ops {
const OpDef empty{.name = "ts::empty", .attrs = attrs_tag<FactoryAttrs>, .prepare = prepare_empty, .rungs = empty_rungs,
                  .no_ladder_problem = "allocation only: no values to compute or check"};
const OpDef fill_{.name = "ts::fill_", .attrs = attrs_tag<FillAttrs>, .prepare = prepare_fill, .rungs = fill__rungs,
                  .cost = write_cost, .scalar_args = fill_scalars};
const OpDef arange{.name = "ts::arange", .attrs = attrs_tag<ArangeAttrs>, .prepare = prepare_arange,
                   .rungs = arange_rungs, .cost = write_cost};
const OpDef rand{.name = "ts::rand", .attrs = attrs_tag<RandomAttrs>, .prepare = prepare_random, .rungs = rand_rungs,
                 .cost = write_cost};
const OpDef randn{.name = "ts::randn", .attrs = attrs_tag<RandomAttrs>, .prepare = prepare_random,
                  .rungs = randn_rungs, .cost = write_cost};
}  // namespace ops

void manual_seed(uint64_t seed) {
  const std::lock_guard lock(generator_mutex);
  generator = {seed, 0};
}

void empty_alloc(Tensor&) {}  // prepare allocated the output: nothing to compute

Tensor empty(const Dims& shape, Options options, Where loc) {
  const FactoryAttrs attrs{shape, options};
  OpCall call(ops::empty, attrs, loc);
  return dispatch(call);
}

Tensor empty_like(const Tensor& x, Where loc) { return empty(x.shape(), {x.dtype(), x.device()}, loc); }

Tensor full(const Dims& shape, double value, Options options, Where loc) {
  check_fill_value("full", value, options.dtype, shape);  // before allocating
  Tensor out = empty(shape, options, loc);
  fill_(out, value, loc);
  return out;
}

Tensor zeros(const Dims& shape, Options options, Where loc) { return full(shape, 0.0, options, loc); }
Tensor ones(const Dims& shape, Options options, Where loc) { return full(shape, 1.0, options, loc); }
Tensor zeros_like(const Tensor& x, Where loc) { return zeros(x.shape(), {x.dtype(), x.device()}, loc); }

Tensor& fill_(Tensor& x, double value, Where loc) {
  const FillAttrs attrs{value};
  OpCall call(ops::fill_, attrs, loc, {&x});
  dispatch(call);
  return x;
}

Tensor arange(double start, double end, double step, Options options, Where loc) {
  TS_CHECK(std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
           "arange: start, end and step must be finite, got ({}, {}, {})", start, end, step);
  TS_CHECK(step != 0, "arange: step must be nonzero");
  const double length = std::ceil((end - start) / step);
  TS_CHECK(length >= 0, "arange: upper bound and larger bound inconsistent with step sign ({}, {}, {})", start, end,
           step);
  TS_CHECK(length < 9223372036854775808.0, "arange: ({}, {}, {}) has {} elements, more than a tensor can hold", start,
           end, step, length);
  const ArangeAttrs attrs{.start = start, .step = step, .length = static_cast<int64_t>(length), .options = options};
  OpCall call(ops::arange, attrs, loc);
  return dispatch(call);
}

Tensor arange(double end, Options options, Where loc) { return arange(0.0, end, 1.0, options, loc); }

namespace detail {

Tensor arange_int64(int64_t start, int64_t end, int64_t step, Options options, Where loc) {
  TS_CHECK(step != 0, "arange: step must be nonzero");
  TS_CHECK(step > 0 ? start <= end : start >= end,
           "arange: upper bound and larger bound inconsistent with step sign ({}, {}, {})", start, end, step);
  // |end - start| and |step| as uint64 (both fit: the span of two int64s is below 2^64), so the
  // count ceil(span / |step|) is exact; past INT64_MAX elements no tensor could hold it.
  const uint64_t span = step > 0 ? static_cast<uint64_t>(end) - static_cast<uint64_t>(start)
                                 : static_cast<uint64_t>(start) - static_cast<uint64_t>(end);
  const uint64_t stride = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  const uint64_t length = span / stride + (span % stride != 0);
  TS_CHECK(length <= static_cast<uint64_t>(INT64_MAX),
           "arange: ({}, {}, {}) has {} elements, more than a tensor can hold", start, end, step, length);
  const ArangeAttrs attrs{
      .length = static_cast<int64_t>(length), .options = options, .integer = true, .int_start = start, .int_step = step};
  OpCall call(ops::arange, attrs, loc);
  return dispatch(call);
}

void arange_bound_past_int64(uint64_t bound) {
  fail("arange: the bound {} cannot be converted to type int64_t without overflow", bound);
}

}  // namespace detail

Tensor rand(const Dims& shape, Options options, Where loc) { return random(ops::rand, shape, options, loc); }
Tensor randn(const Dims& shape, Options options, Where loc) { return random(ops::randn, shape, options, loc); }

// ---- tensors from C++ values --------------------------------------------------

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Dims& shape, Options options) {
  const int64_t numel = checked_numel(shape, "from_vector");
  TS_CHECK(static_cast<int64_t>(values.size()) == numel, "from_vector: {} values cannot fill shape {} ({} elements)",
           values.size(), shape, numel);
  if constexpr (std::is_floating_point_v<T>) {
    if (options.dtype == DType::i64)
      for (const T v : values) check_fill_value("from_vector", static_cast<double>(v), options.dtype, shape);
  }
  // Build on the host in the requested dtype, then move to the device (one copy).
  Tensor host = make_contiguous_tensor(shape, {options.dtype, kCPU}, "from_vector");
  visit_dtype(options.dtype, [&](auto tag) {
    using D = decltype(tag);
    D* p = static_cast<D*>(host.data_ptr());
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<D, bf16> || std::is_same_v<D, f16>) {
        p[i] = D(static_cast<float>(values[i]));
      } else {
        p[i] = numeric_cast<D>(values[i]);
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
