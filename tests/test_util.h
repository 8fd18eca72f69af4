// Shared helpers for tests: where the reference data lives, temporary files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace pocket::testing {

// ../shared/data (or $POCKET_SHARED_DATA); empty when absent.
inline std::string shared_data_dir() {
  const char* env = std::getenv("POCKET_SHARED_DATA");
  std::string dir = env != nullptr ? env : POCKET_SHARED_DATA;
  return std::filesystem::exists(dir) ? dir : std::string();
}

// Skips the current test with a clear message when ../shared/data is absent.
#define POCKET_REQUIRE_SHARED_DATA(dir_var)                                                    \
  const std::string dir_var = ::pocket::testing::shared_data_dir();                           \
  if (dir_var.empty()) GTEST_SKIP() << "reference data ../shared/data is absent; skipping"

// A fresh temporary directory removed at destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pocket-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace pocket::testing
