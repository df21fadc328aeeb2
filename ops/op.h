// ops/op.h: what an op is (OpDef), one rung of its ladder (Variant), and one call of it (OpCall).
//
// Every op folder declares, in its header, everything about its ops:
//   - the attributes, a named struct per op (NarrowAttrs { dim, start, length });
//   - the typed entry point of every kernel, e.g.
//       void narrow_view(const Tensor& x, const NarrowAttrs& attrs, Tensor& out);
//       void add_cuda_vec16(const Tensor& a, const Tensor& b, const BinaryAttrs& attrs, Tensor& out);
//   - its OpDef (defined in the folder's front end): checks, cost, what the
//     profiler records, and the rungs of its ladder.
// The registry (ops/registry.cpp) lists the OpDefs; the dispatcher
// (ops/dispatch.cpp) and the profiler only read them.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "profiler/recorded_op.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace ts {

struct OpCall;
struct Variant;

struct Cost {
  double flops = 0;  // floating-point operations (a multiply-add counts 2)
  double bytes = 0;  // fewest bytes the op must move: inputs read once, outputs written once
};

// The attributes of an op that has none.
struct NoAttrs {};

// An attribute struct's identity: OpCall checks that an op and the attributes
// handed to it (and each kernel and the attributes it reads) agree.
using AttrsTag = const void*;
template <typename Attrs>
inline constexpr char attrs_tag_storage = 0;
template <typename Attrs>
constexpr AttrsTag attrs_tag = &attrs_tag_storage<Attrs>;

struct OpDef {
  const char* name;  // "ts::add": the profiler's row and every error's prefix
  AttrsTag attrs;    // attrs_tag<BinaryAttrs>: the struct OpCall::attrs points to
  // Checks the inputs (throwing a ts::Error that names the op and the shapes),
  // sets call.device and allocates call.out. Runs inside the op's profiler scope.
  void (*prepare)(OpCall& call);
  std::span<const Variant> rungs;  // the ladder, rung 0 (the reference) first
  // What the call must compute and move, from its prepared inputs and output;
  // the ladder runner's roofline. nullptr: nothing to speak of (views, factories).
  Cost (*cost)(const OpCall& call) = nullptr;
  // with_flops: the FLOPs PyTorch's profiler reports for this op (its formula,
  // which is not always cost().flops). nullptr: PyTorch counts none.
  int64_t (*profiled_flops)(const OpCall& call) = nullptr;
  // record_shapes: the scalars of the signature after the tensors, in PyTorch's
  // order (add records alpha like aten::add.Tensor). nullptr: none.
  void (*scalar_args)(const OpCall& call, std::vector<double>& out) = nullptr;
  // Why ts_ladder has no problem to time this op on (a view: no device work), said by the op
  // itself. nullptr: it has one, its entry in bench/ts_ladder.cpp's kProblems (a test fails
  // when an op has neither).
  const char* no_ladder_problem = nullptr;

  const char* short_name() const { return name + 4; }  // "add": the first part of a variant's name
};

enum class VariantDevice : uint8_t { cpu, cuda, any };

// What a CUDA rung needs of the GPU, said in its rung row: a compute capability from which it runs,
// or, for the arch-specific target sm_90a (wgmma, setmaxnreg, TMA multicast...), that capability and
// no other. A kernel that uses an instruction older GPUs lack compiles for them to a trap that
// nothing reaches: dispatch asks gpu_meets() first and goes to the next rung.
struct GpuNeeds {
  uint8_t major = 0, minor = 0;
  bool exact = false;        // sm_90a: runs on compute capability 9.0 alone
  const char* what = "";     // the instructions that need it, for the refusal
  constexpr bool any_gpu() const { return major == 0; }
  // More than every GPU tensorscope runs on has (compute capability 7.5): worth a check per call.
  constexpr bool above_oldest() const { return exact || major > 7 || (major == 7 && minor > 5); }
};
//  no_gpu  a CPU rung, a view or a composite: runs wherever its device runs
//  sm75    plain CUDA C++: every GPU tensorscope runs on (Turing, compute capability 7.5, and newer)
//  sm80    Ampere's tensor-core instructions: mma.sync with bf16, ldmatrix, cp.async
//  sm90a   Hopper's own: wgmma, TMA, setmaxnreg, mbarrier transactions (built for sm_90a)
inline constexpr GpuNeeds no_gpu{};
inline constexpr GpuNeeds sm75{7, 5, false, "plain CUDA C++"};
inline constexpr GpuNeeds sm80{8, 0, false, "mma.sync with bf16, ldmatrix and cp.async"};
inline constexpr GpuNeeds sm90a{9, 0, true, "wgmma, TMA and setmaxnreg (the sm_90a target)"};

// Whether the GPU of `device` has what `needs` asks for, as the rungs see it (cuda::target: the
// capability TS_DEVICE_CAPABILITY chooses for, and the code this build runs there); false with
// the reason otherwise. Always true off CUDA and for rungs that need no more than every GPU has
// (check_device_available refuses a GPU older than 7.5 before any op runs on it).
bool gpu_meets(const GpuNeeds& needs, Device device, std::string* why);
// "-" (no_gpu), "7.5", "8.0", "9.0a": the column ts_ladder --list and ts_bench --list print.
std::string gpu_needs_name(const GpuNeeds& needs);

// One rung of an op's ladder: one kernel, one library call, or one composite.
struct Variant {
  const char* name;  // "add/cuda/vec16": op/device/variant
  const OpDef* op;
  VariantDevice device;  // any: launches nothing itself (a view, a composite of other ops)
  int rung;              // ladder order: 0 = the reference oracle
  GpuNeeds needs;        // what a CUDA rung needs of the GPU (no_gpu for the others)
  const char* summary;   // one line: what this rung does, what changed from the one below
  // nullptr when the rung runs every call its op accepts; otherwise false (and,
  // when why is not null, the reason) for the calls it cannot run. It reads metadata only
  // (shapes, strides, dtypes, devices), so it answers for a call on any device: dispatch asks a
  // forced rung for its reason even when the call is on another device than the rung's.
  bool (*supports)(const OpCall& call, std::string* why);
  void (*run)(OpCall& call);  // run_kernel<&the_kernel>: the call unpacked into the kernel's typed arguments
  // The file that holds the rung's entry point (the function run calls; for a CUDA rung, the file of
  // its kernel), from the repository root: "ops/geglu/geglu_cuda_fused.cu". The entry point is
  // named <op>_<device>_<rung> (add_cuda_vec16, copy_cpu_ref), or <op>_<rung> for device any
  // (t_view, clone_composite); ts_ladder --list and ts_bench --list print the file.
  const char* source;

  bool runs_on(DeviceType type) const {
    return device == VariantDevice::any || static_cast<int>(device) == static_cast<int>(type);
  }
  // Whether this rung can run the call: the GPU has what it needs, then supports(). The one
  // question dispatch, the ladder runner and the tests ask (inline below: dispatch asks it per call).
  bool accepts(const OpCall& call, std::string* why) const;
};

// One call of an op, from its front end through dispatch() to a kernel.
struct OpCall final : profiler::RecordedOp {
  const OpDef& op;
  Device device = kCPU;               // where the op runs; set by prepare from the inputs
  std::array<const Tensor*, 4> in{};  // inputs in the op's documented order (nullptr: absent)
  int num_in = 0;
  Tensor out;                         // the result
  Tensor out2;                        // a second result (max: the indices)
  const Variant* variant = nullptr;   // chosen by dispatch(); the profiler records it
  Where loc;                          // the user's call site (profiler with_stack)

  template <typename Attrs>
  OpCall(const OpDef& def, const Attrs& attributes, Where where, std::initializer_list<const Tensor*> inputs = {})
      : op(def), loc(where), attrs_(&attributes) {
    if (def.attrs != attrs_tag<Attrs>) wrong_attrs();
    TS_CHECK(inputs.size() <= in.size(), "{}: too many inputs", def.name);
    for (const Tensor* x : inputs) in[num_in++] = x;
  }
  template <typename Attrs>  // the attributes must outlive the call: no temporaries
  OpCall(const OpDef&, const Attrs&&, Where, std::initializer_list<const Tensor*> = {}) = delete;
  OpCall(const OpCall&) = delete;
  OpCall& operator=(const OpCall&) = delete;

  const Tensor& input(int i) const { return *in[i]; }
  // The op's attribute struct; Attrs must be the one its OpDef names.
  template <typename Attrs>
  const Attrs& attrs() const {
    if (op.attrs != attrs_tag<Attrs>) wrong_attrs();
    return *static_cast<const Attrs*>(attrs_);
  }

  // What the profiler asks while it records (profiler/recorded_op.h).
  const char* name() const override { return op.name; }
  std::span<const Tensor* const> tensor_args() const override { return {in.data(), static_cast<size_t>(num_in)}; }
  void scalar_args(std::vector<double>& out) const override;
  int64_t flops() const override { return op.profiled_flops != nullptr ? op.profiled_flops(*this) : 0; }
  const char* variant_name() const override { return variant != nullptr ? variant->name : nullptr; }
  const std::source_location& call_site() const override { return loc; }

 private:
  [[noreturn]] void wrong_attrs() const;
  const void* attrs_;
};

inline bool Variant::accepts(const OpCall& call, std::string* why) const {
  if (needs.above_oldest() && !gpu_meets(needs, call.device, why)) return false;
  return supports == nullptr || supports(call, why);
}

// ---- run_kernel: from the dispatcher's OpCall to a kernel's typed arguments ----------------
//
// A kernel names what it takes, in this order:
//   const Tensor&  the op's inputs, in order (in[0], in[1], ...)
//   const Tensor*  an optional input (nullptr when absent)
//   const Attrs&   the op's attribute struct (at most one)
//   Tensor&        the outputs: out, then out2
// run_kernel<&add_cuda_vec16> is the Variant::run that unpacks an OpCall into
// exactly those arguments.

namespace detail {

enum class ArgKind { input, optional_input, attrs, output };

template <typename P>
constexpr ArgKind arg_kind() {
  if constexpr (std::is_same_v<P, const Tensor&>) return ArgKind::input;
  else if constexpr (std::is_same_v<P, const Tensor*>) return ArgKind::optional_input;
  else if constexpr (std::is_same_v<P, Tensor&>) return ArgKind::output;
  else {
    static_assert(std::is_lvalue_reference_v<P> && std::is_const_v<std::remove_reference_t<P>>,
                  "a kernel takes const Tensor&, const Tensor*, const Attrs& and Tensor& parameters");
    return ArgKind::attrs;
  }
}

// Position of parameter i among the parameters that read the same slots (inputs or outputs).
template <size_t N>
constexpr int slot_of(const std::array<ArgKind, N>& kinds, size_t i) {
  const bool reads_input = kinds[i] == ArgKind::input || kinds[i] == ArgKind::optional_input;
  int slot = 0;
  for (size_t j = 0; j < i; ++j) {
    const bool j_input = kinds[j] == ArgKind::input || kinds[j] == ArgKind::optional_input;
    if (reads_input ? j_input : kinds[j] == kinds[i]) ++slot;
  }
  return slot;
}

template <typename P, ArgKind Kind, int Slot>
[[gnu::always_inline]] inline P kernel_arg(OpCall& call) {
  if constexpr (Kind == ArgKind::input) return *call.in[Slot];
  else if constexpr (Kind == ArgKind::optional_input) return call.in[Slot];
  else if constexpr (Kind == ArgKind::output) {
    static_assert(Slot < 2, "a kernel writes at most two outputs (out, out2)");
    if constexpr (Slot == 0) return call.out;
    else return call.out2;
  } else return call.attrs<std::remove_cvref_t<P>>();
}

template <typename Signature>
struct ParamCount;
template <typename... P>
struct ParamCount<void (*)(P...)> : std::integral_constant<size_t, sizeof...(P)> {};

template <typename Signature>
struct Params;
template <typename... P>
struct Params<void (*)(P...)> {
  static constexpr std::array<ArgKind, sizeof...(P)> kinds{arg_kind<P>()...};
  template <size_t I>
  using type = std::tuple_element_t<I, std::tuple<P...>>;
};

}  // namespace detail

// Variant::run of a kernel: calls it with the arguments its parameters name. In a
// debugger this is the one frame between ts::dispatch and the kernel:
//   ts::kernel_call<&ts::add_cpu_ref, 0ul, 1ul, 2ul, 3ul> (call=...)
template <auto Kernel, size_t... I>
void kernel_call(OpCall& call) {
  using P = detail::Params<decltype(Kernel)>;
  Kernel(detail::kernel_arg<typename P::template type<I>, P::kinds[I], detail::slot_of(P::kinds, I)>(call)...);
}

namespace detail {
template <auto Kernel, size_t... I>
constexpr auto kernel_call_of(std::index_sequence<I...>) {
  return &kernel_call<Kernel, I...>;
}
}  // namespace detail

// run_kernel<&add_cpu_ref>: the Variant::run for that kernel.
template <auto Kernel>
inline constexpr void (*run_kernel)(OpCall&) =
    detail::kernel_call_of<Kernel>(std::make_index_sequence<detail::ParamCount<decltype(Kernel)>::value>{});

}  // namespace ts
