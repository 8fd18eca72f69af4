// MappedFile in its load modes: the same bytes, a read-only result, 2 MiB alignment for kRead, huge pages asked
// for and the file faulted in at open for kMap, and the same clear errors for a missing file or a directory.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <random>
#include <vector>

#include "core/mapped_file.h"
#include "core/process_memory.h"
#include "test_util.h"

namespace pocket {
namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(MappedFile, ReadAndMapGiveTheSameBytes) {
  testing::TempDir dir;
  // Sizes around page and huge-page boundaries, and an empty file.
  for (size_t n : {size_t{0}, size_t{1}, size_t{4095}, size_t{4097}, (size_t{2} << 20) + 3, size_t{5} << 20}) {
    const std::string path = dir.file("f" + std::to_string(n));
    const auto want = random_bytes(n, static_cast<uint32_t>(n));
    testing::write_file(path, want);
    for (FileLoad how : {FileLoad::kMap, FileLoad::kMapLazy, FileLoad::kRead}) {
      auto f = MappedFile::open(path, how);
      ASSERT_TRUE(f) << f.status().to_string();
      ASSERT_EQ(f->size(), n);
      EXPECT_EQ(f->path(), path);
      if (n > 0) {
        EXPECT_EQ(std::vector<uint8_t>(f->data(), f->data() + n), want) << n;
        if (how == FileLoad::kRead) {
          EXPECT_EQ(reinterpret_cast<uintptr_t>(f->data()) % (2u << 20), 0u);
        }
      }
      // Moving keeps the bytes; the moved-from file is empty.
      MappedFile g = std::move(*f);
      EXPECT_EQ(g.size(), n);
      EXPECT_EQ(f->size(), 0u);
      if (n > 0) {
        EXPECT_EQ(g.data()[n - 1], want[n - 1]);
      }
    }
  }
}

// Whether this kernel knows MADV_POPULATE_READ (22): asked of an anonymous page.
bool populate_supported() {
  void* p = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  const bool ok = madvise(p, 4096, 22) == 0;
  munmap(p, 4096);
  return ok;
}

// A mapped package of 2 MiB or more asks for huge pages (MADV_HUGEPAGE: "hg" in the mapping's VmFlags), so
// the kernel maps its 2 MiB page-cache folios with one entry each; smaller files are left alone.
TEST(MappedFile, LargeMappingsAskForHugePages) {
  if (!std::ifstream("/proc/self/smaps")) GTEST_SKIP() << "no /proc/self/smaps on this system";
  testing::TempDir dir;
  for (size_t n : {size_t{4} << 20, size_t{64} << 10}) {
    const std::string path = dir.file("h" + std::to_string(n));
    testing::write_file(path, random_bytes(n, 7));
    auto f = MappedFile::open(path, FileLoad::kMap);
    ASSERT_TRUE(f) << f.status().to_string();
    const MappingReading r = read_mapping(f->data());
    ASSERT_GT(r.mapping_bytes, 0u) << "mapping not found in /proc/self/smaps";
    // kMap faulted the whole file in at open: it is resident before anything reads it (where the kernel has
    // MADV_POPULATE_READ, Linux 5.14+).
    if (n >= (size_t{2} << 20) && populate_supported()) {
      EXPECT_GE(r.resident_bytes, n - 4096);
    }
    EXPECT_EQ(r.huge_pages_advised, n >= (size_t{2} << 20)) << n;
  }
}

// read_mapping finds the mapping that holds an address and reports its size and huge-page bytes (what
// `pocket bench` prints for the package); nothing for an address no mapping holds.
TEST(MappedFile, MappingReadingFindsTheMapping) {
  if (!std::ifstream("/proc/self/smaps")) GTEST_SKIP() << "no /proc/self/smaps on this system";
  testing::TempDir dir;
  const std::string path = dir.file("r");
  const size_t n = size_t{6} << 20;
  testing::write_file(path, random_bytes(n, 3));
  for (FileLoad how : {FileLoad::kMap, FileLoad::kRead}) {
    auto f = MappedFile::open(path, how);
    ASSERT_TRUE(f) << f.status().to_string();
    const MappingReading r = read_mapping(f->data() + n / 2);
    EXPECT_GE(r.mapping_bytes, n);
    EXPECT_LE(r.mapping_bytes, n + (size_t{4} << 20));  // the file, or the aligned copy and its slack
    EXPECT_LE(r.huge_bytes, r.mapping_bytes);
    EXPECT_LE(r.resident_bytes, r.mapping_bytes);
    EXPECT_TRUE(r.huge_pages_advised);  // both modes ask for huge pages on 6 MiB
  }
  const MappingReading none = read_mapping(nullptr);
  EXPECT_EQ(none.mapping_bytes, 0u);
  EXPECT_EQ(none.huge_bytes, 0u);
}

TEST(MappedFile, ErrorsNameThePathInBothModes) {
  testing::TempDir dir;
  for (FileLoad how : {FileLoad::kMap, FileLoad::kRead}) {
    auto missing = MappedFile::open(dir.file("nope.pocket"), how);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.status().code(), ErrorCode::kIoError);
    EXPECT_NE(missing.status().message().find("nope.pocket"), std::string::npos);
    std::filesystem::create_directory(dir.file("sub"));
    auto folder = MappedFile::open(dir.file("sub"), how);
    ASSERT_FALSE(folder);
    EXPECT_NE(folder.status().message().find("not a regular file"), std::string::npos);
  }
}

// Permissions of the mapping that holds address p, from /proc/self/maps ("r--p", ...); empty if none.
std::string permissions_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto a = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    uintptr_t lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, perms) == 3 && lo <= a && a < hi) return perms;
  }
  return "";
}

// The read copy is read-only like the mapping: a stray write faults instead of changing the weights.
TEST(MappedFile, BothModesAreReadOnly) {
  testing::TempDir dir;
  const std::string path = dir.file("w");
  testing::write_file(path, random_bytes(100, 1));
  for (FileLoad how : {FileLoad::kMap, FileLoad::kRead}) {
    auto f = MappedFile::open(path, how);
    ASSERT_TRUE(f);
    const std::string perms = permissions_of(f->data());
    ASSERT_EQ(perms.size(), 4u) << "no mapping found in /proc/self/maps";
    EXPECT_EQ(perms.substr(0, 2), "r-") << perms;
  }
}

}  // namespace
}  // namespace pocket
