// tests/support/scratch_dir.h: a folder of this test process's own under the temporary
// directory ("<name>_<pid>"), made when the object is and removed with everything in it when
// it is destroyed (held in a function-local static: at process exit).
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <string_view>
#include <system_error>

namespace ts::testing {

class ScratchDir {
 public:
  explicit ScratchDir(std::string_view name)
      : path_(std::filesystem::temp_directory_path() / fmt::format("{}_{}", name, getpid())) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ts::testing
