// PackageWriter refuses what the reader would refuse, and a failed write leaves no file behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "format/package.h"
#include "format/package_writer.h"
#include "test_util.h"

namespace pocket {
namespace {

Status add_f32(PackageWriter& w, std::string name, std::vector<uint64_t> shape) {
  auto size = tensor_bytes(DType::kF32, shape);
  std::vector<uint8_t> bytes(size && *size < (1u << 20) ? *size : 0);
  return w.add_tensor(std::move(name), DType::kF32, std::move(shape), bytes);
}

// Regression: the writer accepted names the reader rejects (NUL, invalid UTF-8).
TEST(PackageWriter, RefusesNamesTheReaderRejects) {
  PackageWriter w;
  for (std::string bad : {std::string(), std::string("a\0b", 3), std::string("\xC0\xAF"), std::string(513, 'x')}) {
    Status s = add_f32(w, bad, {2});
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.message();
  }
  EXPECT_TRUE(add_f32(w, std::string(512, 'x'), {2}).is_ok());
  EXPECT_TRUE(add_f32(w, "\xE6\xB3\xA8", {2}).is_ok());
  EXPECT_EQ(add_f32(w, "\xE6\xB3\xA8", {2}).code(), ErrorCode::kInvalidArgument);  // duplicate
}

TEST(PackageWriter, RefusesBadShapesAndTypes) {
  PackageWriter w;
  EXPECT_EQ(add_f32(w, "a", {}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(add_f32(w, "a", {1, 1, 1, 1, 1}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(add_f32(w, "a", {0}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(add_f32(w, "a", {kMaxDim + 1}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(add_f32(w, "a", {kMaxDim, kMaxDim, kMaxDim}).code(), ErrorCode::kInvalidArgument);  // overflows
  std::vector<uint8_t> four(4);
  EXPECT_EQ(w.add_tensor("a", static_cast<DType>(3), {4}, four).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("a", DType::kF32, {2}, four).code(), ErrorCode::kInvalidArgument);  // needs 8 bytes
}

TEST(PackageWriter, FailedFillLeavesNoFile) {
  testing::TempDir dir;
  PackageWriter w;
  ASSERT_TRUE(w.add_tensor("a", DType::kF32, {4}, [](std::span<uint8_t>) {
                 return io_error("source vanished");
               }).is_ok());
  const std::string path = dir.file("m.pocket");
  Status s = w.write(path);
  EXPECT_EQ(s.code(), ErrorCode::kIoError);
  EXPECT_EQ(s.message(), "source vanished");
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

// Regression: an empty section (here the tokenizer) was written with checksum 0, which no reader accepts.
TEST(PackageWriter, EmptyPackageRoundTrips) {
  testing::TempDir dir;
  PackageWriter w;
  ASSERT_TRUE(w.write(dir.file("e.pocket")).is_ok());
  auto pkg = Package::open(dir.file("e.pocket"), {true});
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  EXPECT_TRUE(pkg->tensors().empty());
  EXPECT_EQ(pkg->descriptor_json(), "{}");
  EXPECT_TRUE(pkg->tokenizer_bytes().empty());
}

}  // namespace
}  // namespace pocket
