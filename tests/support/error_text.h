// tests/support/error_text.h: what a refusal says, for tests that check the words of a ts::Error.
#pragma once

#include <string>

#include "tensor/error.h"

namespace ts::testing {

// The message of the ts::Error that fn throws ("" when it throws none).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ts::Error& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace ts::testing
