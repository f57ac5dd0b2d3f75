#pragma once

// A fresh, empty folder under the system's temporary folder for one test, removed with what it
// holds (its permissions restored first, for tests that take them away).

#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <string>
#include <system_error>

namespace attn::test {

class TempDir {
 public:
  TempDir() {
    namespace fs = std::filesystem;
    std::random_device entropy;
    for (int attempt = 0; attempt < 100; ++attempt) {
      path_ = fs::temp_directory_path() / ("attn-test-" + std::to_string(entropy()));
      if (fs::create_directory(path_)) return;
    }
    FAIL("cannot make a temporary folder");
  }
  ~TempDir() {
    namespace fs = std::filesystem;
    std::error_code ignored;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace attn::test
