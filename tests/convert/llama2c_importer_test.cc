// llama2.c import: bad headers and sizes are refused with errors that name the problem.
#include <gtest/gtest.h>

#include <cstring>

#include "convert/llama2c_importer.h"
#include "format/package.h"
#include "test_util.h"

namespace pocket {
namespace {

std::vector<uint8_t> header(std::initializer_list<int32_t> v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}

class Llama2cImport : public ::testing::Test {
 protected:
  Status import_bytes(const std::vector<uint8_t>& bytes) {
    const std::string in = dir_.file("m.bin");
    testing::write_file(in, bytes);
    Llama2cImportOptions o;
    const std::string data = testing::shared_data_dir();
    o.tokenizer_path = data.empty() ? dir_.file("missing-tok.bin") : data + "/models/stories260K/tok512.bin";
    return import_llama2c(in, dir_.file("out.pocket"), o);
  }
  testing::TempDir dir_;
};

TEST_F(Llama2cImport, EmptyAndTruncatedHeader) {
  Status st = import_bytes({});
  EXPECT_EQ(st.code(), ErrorCode::kCorruptFile);
  EXPECT_NE(st.message().find("header truncated"), std::string::npos);
  st = import_bytes(header({64, 172, 5}));
  EXPECT_NE(st.message().find("header truncated"), std::string::npos);
}

TEST_F(Llama2cImport, NegativeZeroAndHugeHeaderValues) {
  Status st = import_bytes(header({64, -172, 5, 8, 4, 512, 512}));
  EXPECT_EQ(st.code(), ErrorCode::kCorruptFile);
  EXPECT_NE(st.message().find("hidden_dim"), std::string::npos);
  st = import_bytes(header({0, 172, 5, 8, 4, 512, 512}));
  EXPECT_NE(st.message().find("dim = 0"), std::string::npos);
  st = import_bytes(header({64, 172, 5, 8, 4, 512, 0x7fffffff}));
  EXPECT_NE(st.message().find("seq_len"), std::string::npos);
  st = import_bytes(header({64, 172, 5, 8, 3, 512, 512}));  // 8 heads, 3 kv heads
  EXPECT_NE(st.message().find("n_kv_heads"), std::string::npos);
  st = import_bytes(header({64, 172, 5, 7, 7, 512, 512}));  // 64 not divisible by 7
  EXPECT_NE(st.message().find("multiple of n_heads"), std::string::npos);
}

TEST_F(Llama2cImport, SizeMismatchNamesTruncation) {
  auto b = header({64, 172, 5, 8, 4, 512, 512});
  b.resize(b.size() + 1000, 0);
  Status st = import_bytes(b);
  EXPECT_EQ(st.code(), ErrorCode::kCorruptFile);
  EXPECT_NE(st.message().find("truncated"), std::string::npos);
}

TEST_F(Llama2cImport, RealCheckpointImportsAndTrailingBytesAreRefused) {
  POCKET_REQUIRE_SHARED_DATA(data);
  auto bytes = testing::read_file(data + "/models/stories260K/stories260K.bin");
  ASSERT_TRUE(import_bytes(bytes).is_ok());
  auto pkg = Package::open(dir_.file("out.pocket"), {true});
  ASSERT_TRUE(pkg) << pkg.status().to_string();
  EXPECT_EQ(pkg->tensors().size(), 1u + 5u * 9u + 1u);
  bytes.push_back(0);
  Status st = import_bytes(bytes);
  EXPECT_NE(st.message().find("trailing data"), std::string::npos);
}

}  // namespace
}  // namespace pocket
