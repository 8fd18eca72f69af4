// GGUF reader: a synthetic file round trip, the real vocab files, and hostile files (RELIABILITY.md 1-6):
// truncation at every byte, bad magic/version, huge counts rejected before allocation, bad tensor infos.
#include "convert/gguf_reader.h"

#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"

namespace pocket {
namespace {

// A tiny GGUF writer for tests.
class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3) { raw("GGUF", 4); u32(version); }
  GgufBuilder& u32(uint32_t v) { return pod(v); }
  GgufBuilder& u64(uint64_t v) { return pod(v); }
  GgufBuilder& str(std::string_view s) { u64(s.size()); return raw(s.data(), s.size()); }
  GgufBuilder& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }
  template <typename T>
  GgufBuilder& pod(T v) { return raw(&v, sizeof v); }
  GgufBuilder& pad_to(size_t a) {
    while (bytes.size() % a) bytes.push_back(0);
    return *this;
  }
  std::vector<uint8_t> bytes;
};

// 2 tensors, 4 keys (string, u32, string array, f32 array).
std::vector<uint8_t> good_file() {
  GgufBuilder b;
  b.u64(2).u64(4);
  b.str("general.name").u32(8).str("tiny");
  b.str("tiny.block_count").u32(4).u32(5);
  b.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(3).str("a").str("b").str("ab");
  b.str("tokenizer.ggml.scores").u32(9).u32(6).u64(3).pod(1.0f).pod(2.0f).pod(3.0f);
  b.str("w").u32(2).u64(4).u64(2).u32(0).u64(0);      // f32 [2][4]: 32 bytes at 0
  b.str("q").u32(1).u64(32).u32(8).u64(32);           // q8_0 [32]: 34 bytes at 32
  b.pad_to(32);
  b.bytes.resize(b.bytes.size() + 96, 0);
  return b.bytes;
}

TEST(GgufReader, ParsesSyntheticFile) {
  const auto bytes = good_file();
  auto g = GgufFile::parse(bytes, "tiny.gguf");
  ASSERT_TRUE(g.has_value()) << g.status().to_string();
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(*g->get_string("general.name"), "tiny");
  EXPECT_EQ(*g->get_int("tiny.block_count"), 5);
  EXPECT_EQ(*g->get_string_array("tokenizer.ggml.tokens"), (std::vector<std::string_view>{"a", "b", "ab"}));
  EXPECT_EQ(*g->get_f32_array("tokenizer.ggml.scores"), (std::vector<float>{1, 2, 3}));
  ASSERT_EQ(g->tensors().size(), 2u);
  EXPECT_EQ(g->tensors()[0].n_bytes, 32u);
  EXPECT_EQ(g->tensors()[1].n_bytes, 34u);
  EXPECT_EQ(g->data_offset() % 32, 0u);
  EXPECT_FALSE(g->get_string("tiny.block_count").has_value());
  EXPECT_NE(g->get_int("missing").status().message().find("missing key 'missing'"), std::string::npos);
}

TEST(GgufReader, TruncatedAtEveryByte) {
  const auto bytes = good_file();
  auto g = GgufFile::parse(bytes, "t.gguf");
  ASSERT_TRUE(g.has_value());
  const size_t needed = g->data_offset() + 32 + 34;  // padding after the last tensor is optional
  for (size_t n = 0; n < needed; ++n) {
    EXPECT_FALSE(GgufFile::parse(std::span(bytes.data(), n), "t.gguf").has_value()) << n;
  }
}

std::string error_of(const std::vector<uint8_t>& b) {
  auto g = GgufFile::parse(b, "bad.gguf");
  return g.has_value() ? std::string() : g.status().message();
}

TEST(GgufReader, RejectsBadHeaders) {
  auto b = good_file();
  b[0] = 'X';
  EXPECT_NE(error_of(b).find("wrong magic"), std::string::npos);
  for (uint32_t v : {0u, 1u, 4u}) {
    b = good_file();
    std::memcpy(b.data() + 4, &v, 4);
    EXPECT_NE(error_of(b).find("version " + std::to_string(v)), std::string::npos);
  }
  for (uint64_t n : {uint64_t{1} << 32, uint64_t{1} << 63, ~uint64_t{0}}) {
    b = good_file();
    std::memcpy(b.data() + 8, &n, 8);  // n_tensors
    EXPECT_NE(error_of(b).find("tensors, more than"), std::string::npos);
    b = good_file();
    std::memcpy(b.data() + 16, &n, 8);  // n_kv
    EXPECT_NE(error_of(b).find("metadata entries, more than"), std::string::npos);
  }
  EXPECT_NE(error_of({}).find("empty"), std::string::npos);
}

TEST(GgufReader, RejectsHugeArraysAndStrings) {
  GgufBuilder b;
  b.u64(0).u64(1).str("k").u32(9).u32(8).u64(uint64_t{1} << 62);
  EXPECT_NE(error_of(b.bytes).find("strings, more than the file can hold"), std::string::npos);
  GgufBuilder c;
  c.u64(0).u64(1).str("k").u32(9).u32(6).u64(uint64_t{1} << 62);
  EXPECT_NE(error_of(c.bytes).find("elements, more than the file can hold"), std::string::npos);
  GgufBuilder d;
  d.u64(0).u64(1).u64(uint64_t{1} << 40).u64(0).u64(0);
  EXPECT_NE(error_of(d.bytes).find("claims a string"), std::string::npos);
  GgufBuilder e;
  e.u64(0).u64(1).str("k").u32(9).u32(9).u64(1);
  EXPECT_NE(error_of(e.bytes).find("array of arrays"), std::string::npos);
  GgufBuilder f;
  f.u64(0).u64(1).str("k").u32(77);
  EXPECT_NE(error_of(f.bytes).find("unknown type 77"), std::string::npos);
  GgufBuilder g;
  g.u64(0).u64(2).str("k").u32(4).u32(1).str("k").u32(4).u32(2);
  EXPECT_NE(error_of(g.bytes).find("duplicate metadata key 'k'"), std::string::npos);
}

std::vector<uint8_t> one_tensor(uint32_t n_dims, std::vector<uint64_t> dims, uint32_t type, uint64_t offset,
                                size_t data_bytes, const char* name2 = nullptr) {
  GgufBuilder b;
  b.u64(name2 ? 2 : 1).u64(0);
  b.str("t").u32(n_dims);
  for (uint64_t d : dims) b.u64(d);
  b.u32(type).u64(offset);
  if (name2) b.str(name2).u32(1).u64(8).u32(0).u64(0);
  b.pad_to(32);
  b.bytes.resize(b.bytes.size() + data_bytes, 0);
  return b.bytes;
}

TEST(GgufReader, RejectsBadTensorInfos) {
  EXPECT_EQ(error_of(one_tensor(1, {8}, 0, 0, 32)), "");
  EXPECT_NE(error_of(one_tensor(0, {}, 0, 0, 32)).find("0 dimensions"), std::string::npos);
  EXPECT_NE(error_of(one_tensor(5, {1, 1, 1, 1, 1}, 0, 0, 32)).find("5 dimensions"), std::string::npos);
  EXPECT_NE(error_of(one_tensor(1, {0}, 0, 0, 32)).find("dimension 0"), std::string::npos);
  EXPECT_NE(error_of(one_tensor(4, {1u << 20, 1u << 20, 1u << 20, 1u << 20}, 0, 0, 32)).find("overflows"), std::string::npos);
  EXPECT_NE(error_of(one_tensor(1, {8}, 99, 0, 32)).find("unknown ggml type 99"), std::string::npos);
  EXPECT_NE(error_of(one_tensor(1, {33}, 8, 0, 64)).find("not a multiple of its block"), std::string::npos);
  EXPECT_NE(error_of(one_tensor(1, {8}, 0, 4, 64)).find("not a multiple of the alignment"), std::string::npos);
  EXPECT_NE(error_of(one_tensor(1, {8}, 0, 0, 16)).find("past the end"), std::string::npos);
  EXPECT_NE(error_of(one_tensor(1, {8}, 0, ~uint64_t{0} - 31, 32)).find("past the end"), std::string::npos);
  EXPECT_NE(error_of(one_tensor(1, {16}, 0, 0, 64, "u")).find("overlap"), std::string::npos);
  EXPECT_NE(error_of(one_tensor(1, {8}, 0, 0, 64, "t")).find("duplicate tensor name 't'"), std::string::npos);
}

TEST(GgufReader, ReadsRealVocabFiles) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  for (const char* v : {"llama-spm", "gpt-2", "phi-3"}) {
    auto g = GgufFile::open(dir + "/tokenizers/vectors/ggml-vocab-" + std::string(v) + ".gguf");
    ASSERT_TRUE(g.has_value()) << g.status().to_string();
    EXPECT_EQ(g->version(), 3u);
    auto toks = g->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(toks.has_value());
    EXPECT_GT(toks->size(), 30000u);
  }
}

}  // namespace
}  // namespace pocket
