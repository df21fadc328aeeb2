// tensor/error.h: ts::Error, the one exception type every user mistake becomes.
//
// Messages name the op, the shapes and what was expected, e.g.
//   mm: mat1 and mat2 shapes cannot be multiplied (64x32 and 64x64)
// In gdb, `catch throw` stops exactly where the mistake is detected.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace ts {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace ts

// TS_CHECK(cond, "fmt", args...): throw ts::Error with the formatted message unless cond.
#define TS_CHECK(cond, ...)                  \
  do {                                       \
    if (!(cond)) [[unlikely]] {              \
      ::ts::fail(__VA_ARGS__);               \
    }                                        \
  } while (0)
