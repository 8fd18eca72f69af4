// .imatrix files: round trip, and every malformed file (truncated at each byte, bad magic or version,
// absurd counts, duplicate names, NaN or negative values, trailing bytes) gives a clear error.
#include "quant/importance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "test_util.h"

namespace pocket::quant {
namespace {

ImportanceMap sample_map() {
  ImportanceMap m;
  m.n_tokens = 1234;
  m.columns["blk.0.attn_q.weight"] = {0.5f, 1.0f, 0.0f, 3.25f};
  m.columns["token_embd.weight"] = {2.0f, 0.125f};
  return m;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Importance, RoundTrips) {
  testing::TempDir dir;
  const std::string path = dir.file("a.imatrix");
  ASSERT_TRUE(write_importance(path, sample_map()).is_ok());
  auto m = read_importance(path);
  ASSERT_TRUE(m.has_value()) << m.status().to_string();
  EXPECT_EQ(m->n_tokens, 1234u);
  EXPECT_EQ(m->columns, sample_map().columns);
  ASSERT_NE(m->find("token_embd.weight"), nullptr);
  EXPECT_EQ(m->find("output.weight"), nullptr);
}

TEST(Importance, EveryTruncationIsAnError) {
  testing::TempDir dir;
  const std::string path = dir.file("a.imatrix");
  ASSERT_TRUE(write_importance(path, sample_map()).is_ok());
  const auto bytes = file_bytes(path);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto m = parse_importance(bytes.data(), n, "t");
    ASSERT_FALSE(m.has_value()) << n;
    EXPECT_EQ(m.status().code(), ErrorCode::kCorruptFile) << n;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(parse_importance(longer.data(), longer.size(), "t").has_value());
}

TEST(Importance, MalformedFieldsAreErrors) {
  testing::TempDir dir;
  const std::string path = dir.file("a.imatrix");
  ASSERT_TRUE(write_importance(path, sample_map()).is_ok());
  const auto good = file_bytes(path);
  auto patched = [&](size_t at, const void* v, size_t n) {
    std::vector<uint8_t> b = good;
    std::memcpy(b.data() + at, v, n);
    return parse_importance(b.data(), b.size(), "t");
  };
  const uint32_t zero = 0, big = 0xffffffffu, v2 = 2;
  EXPECT_FALSE(patched(0, "GGUF", 4).has_value());     // magic
  EXPECT_FALSE(patched(8, &v2, 4).has_value());        // future version
  EXPECT_FALSE(patched(8, &zero, 4).has_value());      // version 0
  EXPECT_FALSE(patched(12, &big, 4).has_value());      // entry count 2^32 - 1: refused before allocating
  EXPECT_FALSE(patched(12, &zero, 4).has_value());     // no entries
  const uint64_t zero64 = 0;
  EXPECT_FALSE(patched(16, &zero64, 8).has_value());   // 0 tokens
  EXPECT_FALSE(patched(24, &big, 4).has_value());      // name length
  // First entry: "blk.0.attn_q.weight" (19 bytes) then its column count at 24 + 4 + 19.
  EXPECT_FALSE(patched(47, &big, 4).has_value());      // column count 2^32 - 1
  EXPECT_FALSE(patched(47, &zero, 4).has_value());     // no columns
  const float nan = std::nanf(""), neg = -1.0f;
  EXPECT_FALSE(patched(51, &nan, 4).has_value());
  EXPECT_FALSE(patched(51, &neg, 4).has_value());
  // Duplicate name: two entries whose names collide once one byte of the second is patched.
  ImportanceMap two;
  two.n_tokens = 1;
  two.columns["aaaa"] = {1.0f};
  two.columns["aaab"] = {1.0f};
  ASSERT_TRUE(write_importance(path, two).is_ok());
  auto b = file_bytes(path);
  // Entries: [24] len, [28] "aaaa", [32] cols, [36] f32, [40] len, [44] "aaab".
  ASSERT_EQ(b[47], 'b');
  b[47] = 'a';
  auto dup = parse_importance(b.data(), b.size(), "dup.imatrix");
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.status().to_string().find("twice"), std::string::npos) << dup.status().to_string();
}

TEST(Importance, WriteRefusesInvalidMaps) {
  testing::TempDir dir;
  ImportanceMap m;
  EXPECT_FALSE(write_importance(dir.file("e.imatrix"), m).is_ok());  // empty
  m = sample_map();
  m.columns["x"] = {std::nanf("")};
  EXPECT_FALSE(write_importance(dir.file("n.imatrix"), m).is_ok());
  EXPECT_FALSE(read_importance(dir.file("missing.imatrix")).has_value());
}

}  // namespace
}  // namespace pocket::quant
