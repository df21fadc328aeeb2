// tensor/print.cpp: Tensor::str(), PyTorch's print format.
//
//   tensor([[1.0000, 2.5000],
//           [3.0000, 4.0000]], dtype=ts.bfloat16)
// Rules as in torch/_tensor_str.py: 4 decimals; "1." style when every value
// is an integer; scientific when magnitudes span more than 1e3 or leave
// [1e-4, 1e8) (integers: span more than 1e3 or reach 1e8); values
// right-aligned to the width of the widest finite nonzero one; rows wrap at
// 80 columns; more than 1000 elements are summarized with "..." keeping 3
// items at each edge, and the format is then chosen from the items shown;
// dtype shown unless float32 (or int64), device unless cpu.
#include <cmath>
#include <functional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace ts {

namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;

// Calls fn(flat index) for every element printing shows, in order: all of them,
// or when summarizing the kEdgeItems at each end of every dim (PyTorch's get_summarized_data).
template <typename Fn>
void for_each_shown(const Dims& shape, bool summarize, int dim, int64_t base, Fn&& fn) {
  if (dim == shape.size()) {
    fn(base);
    return;
  }
  int64_t inner = 1;
  for (int d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t n = shape[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    for_each_shown(shape, summarize, dim + 1, base + i * inner, fn);
  }
}

struct Formatter {
  enum class Mode { integer, fixed, scientific, boolean, int64 } mode = Mode::fixed;

  Formatter(const std::vector<double>& values, DType dtype) {
    if (dtype == DType::b8) { mode = Mode::boolean; return; }
    if (dtype == DType::i64) { mode = Mode::int64; return; }
    bool all_integer = true;
    double max_abs = 0, min_abs = INFINITY;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      if (v != std::nearbyint(v)) all_integer = false;
      const double a = std::fabs(v);
      if (a == 0) continue;
      max_abs = std::max(max_abs, a);
      min_abs = std::min(min_abs, a);
    }
    const bool wide_span = max_abs > 0 && (max_abs / min_abs > 1000.0 || max_abs > 1e8);
    if (all_integer) {
      mode = wide_span ? Mode::scientific : Mode::integer;
    } else if (wide_span || (max_abs > 0 && min_abs < 1e-4)) {
      mode = Mode::scientific;
    }
  }

  std::string operator()(double v) const {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    switch (mode) {
      case Mode::boolean: return v != 0 ? "True" : "False";
      case Mode::int64: break;  // printed exactly from the int64 values (see Tensor::str)
      case Mode::integer: return fmt::format("{:.0f}.", v);
      case Mode::scientific: return fmt::format("{:.4e}", v);
      case Mode::fixed: break;
    }
    return fmt::format("{:.4f}", v);
  }
};

struct Printer {
  const std::function<std::string(int64_t)>& cell;  // the text of row-major element i
  const Dims& shape;
  size_t width;
  bool summarize;

  // Prints the sub-tensor at `dim` starting at flat element `base`; indent is the column of its "[".
  void print(std::string& out, int dim, int64_t base, int indent) const {
    int64_t inner = 1;
    for (int d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
    const int64_t n = shape[dim];
    const bool skip = summarize && n > 2 * kEdgeItems;
    out += '[';
    if (dim == shape.size() - 1) {
      // A row: as many items as fit in the line width per line; " ..." is an item too.
      const int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent) / static_cast<int64_t>(width + 2));
      int64_t on_line = 0;
      auto item = [&](const std::string& s) {
        if (on_line == per_line) {
          out += ",\n" + std::string(static_cast<size_t>(indent + 1), ' ');
          on_line = 0;
        } else if (on_line > 0) {
          out += ", ";
        }
        out += s;
        ++on_line;
      };
      for (int64_t i = 0; i < n; ++i) {
        if (skip && i == kEdgeItems) {
          item(" ...");
          i = n - kEdgeItems;
        }
        const std::string s = cell(base + i);
        item(std::string(width > s.size() ? width - s.size() : 0, ' ') + s);  // right-aligned
      }
    } else {
      // Between sub-tensors: a newline per remaining dim, then indentation past this level's "[".
      const std::string separator = "," + std::string(static_cast<size_t>(shape.size() - dim - 1), '\n') +
                                    std::string(static_cast<size_t>(indent + 1), ' ');
      for (int64_t i = 0; i < n; ++i) {
        if (skip && i == kEdgeItems) {
          out += "...";
          out += separator;
          i = n - kEdgeItems;
        }
        print(out, dim + 1, base + i * inner, indent + 1);
        if (i + 1 < n) out += separator;
      }
    }
    out += ']';
  }
};


// Element `flat` (row-major) of a host tensor, read through its strides: printing a
// summarized tensor reads the elements it shows, never the whole tensor (an expanded
// view may have far more elements than memory).
template <typename Out>
Out element_at(const Tensor& x, const char* base, int64_t flat) {
  int64_t offset = 0;
  for (int d = x.dim() - 1; d >= 0; --d) {
    offset += flat % x.shape()[d] * x.strides()[d];
    flat /= x.shape()[d];
  }
  const char* p = base + offset * static_cast<int64_t>(x.element_size());
  return visit_dtype(x.dtype(), [&](auto tag) -> Out {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      return static_cast<Out>(static_cast<float>(*reinterpret_cast<const T*>(p)));
    } else if constexpr (std::is_same_v<Out, int64_t> && !std::is_same_v<T, int64_t>) {
      return 0;  // only int64 tensors are read as int64
    } else {
      return static_cast<Out>(*reinterpret_cast<const T*>(p));
    }
  });
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::vector<char> host;
  const char* base = detail::host_data(*this, host);
  const bool summarize = numel() > kSummarizeAbove;
  std::vector<int64_t> shown;
  if (numel() > 0) for_each_shown(shape_, summarize, 0, 0, [&](int64_t i) { shown.push_back(i); });
  std::unordered_map<int64_t, size_t> slot;  // flat index -> position in shown
  std::vector<double> values;
  std::vector<int64_t> ints;  // int64 values print exactly: a double holds integers only up to 2^53
  for (int64_t i : shown) {
    slot.emplace(i, values.size());
    values.push_back(element_at<double>(*this, base, i));
    if (dtype_ == DType::i64) ints.push_back(element_at<int64_t>(*this, base, i));
  }
  const Formatter format(values, dtype_);
  const std::function<std::string(int64_t)> cell = [&](int64_t i) {
    const size_t at = slot.at(i);
    return dtype_ == DType::i64 ? fmt::format("{}", ints[at]) : format(values[at]);
  };

  // One width for every element: floats measure their finite nonzero values only (so "0."
  // or "-inf" among wider numbers widens nothing), bool and int64 measure all.
  size_t width = 1;
  for (int64_t i : shown) {
    const double v = values[slot.at(i)];
    if (!is_floating(dtype_) || (v != 0 && std::isfinite(v))) width = std::max(width, cell(i).size());
  }

  std::string out = "tensor(";
  if (dim() == 0) {
    out += cell(0);
  } else if (numel() == 0) {
    out += "[]";
  } else {
    Printer{cell, shape_, width, summarize}.print(out, 0, 0, static_cast<int>(out.size()));
  }
  if (numel() == 0 && dim() > 1) {  // the sizes as a Python tuple: size=(2, 0)
    out += ", size=(";
    for (int i = 0; i < dim(); ++i) out += (i ? ", " : "") + std::to_string(shape_[i]);
    out += ')';
  }
  if (!device().is_cpu()) out += fmt::format(", device='{}'", device().str());
  if (dtype_ != DType::f32 && dtype_ != DType::i64 && dtype_ != DType::b8) out += fmt::format(", dtype={}", dtype_print_name(dtype_));
  out += ')';
  return out;
}

}  // namespace ts
