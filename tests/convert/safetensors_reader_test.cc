// safetensors reader against hostile files (RELIABILITY.md 1-7): truncation at every byte, absurd header
// lengths, bad shapes and dtypes, offsets outside the buffer, overlaps, holes, duplicates, bad JSON.
#include <gtest/gtest.h>

#include <cstring>

#include "convert/safetensors_reader.h"
#include "core/half.h"

namespace pocket {
namespace {

std::vector<uint8_t> file_with_header(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8);
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0);
  return out;
}

// Two F32 tensors: a [2, 3] at [0, 24) and b [4] at [24, 40).
const std::string kGood =
    R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
    R"("b":{"dtype":"F16","shape":[8],"data_offsets":[24,40]}})";

Status parse_header(const std::string& header, size_t data_bytes) {
  const auto b = file_with_header(header, data_bytes);
  return SafetensorsFile::parse(b, "t.safetensors").status();
}

void expect_error(const std::string& header, size_t data, const std::string& needle) {
  Status st = parse_header(header, data);
  EXPECT_EQ(st.code(), ErrorCode::kCorruptFile) << header;
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("t.safetensors"), std::string::npos) << "error names the file: " << st.message();
}

TEST(SafetensorsReader, ParsesAGoodFile) {
  auto bytes = file_with_header(kGood, 40);
  const float a[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(bytes.data() + 8 + kGood.size(), a, 24);
  const uint16_t h = f32_to_f16(0.5f);
  std::memcpy(bytes.data() + 8 + kGood.size() + 24 + 2, &h, 2);
  auto f = SafetensorsFile::parse(bytes, "t.safetensors");
  ASSERT_TRUE(f) << f.status().to_string();
  ASSERT_EQ(f->tensors().size(), 2u);
  const StTensor* t = f->find("a");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<uint64_t>{2, 3}));
  float row[3];
  st_read_f32(*t, 3, 3, row);
  EXPECT_EQ(row[0], 4.0f);
  float x[2];
  st_read_f32(*f->find("b"), 0, 2, x);
  EXPECT_EQ(x[1], 0.5f);
  EXPECT_EQ(f->metadata().at("format"), "pt");
}

TEST(SafetensorsReader, TruncatedAtEveryByteIsAnError) {
  const auto good = file_with_header(kGood, 40);
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> b(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    auto f = SafetensorsFile::parse(b, "t.safetensors");
    EXPECT_FALSE(f.has_value()) << "truncated to " << n;
    EXPECT_EQ(f.status().code(), ErrorCode::kCorruptFile);
  }
  EXPECT_NE(parse_header(kGood, 39).message().find("outside the data buffer"), std::string::npos);
}

TEST(SafetensorsReader, EmptyFileAndAbsurdHeaderLengths) {
  EXPECT_NE(SafetensorsFile::parse({}, "t.safetensors").status().message().find("empty"), std::string::npos);
  for (uint64_t len : {uint64_t{1} << 32, uint64_t{1} << 63, ~uint64_t{0}, kSafetensorsMaxHeader + 1}) {
    std::vector<uint8_t> b(64, ' ');
    std::memcpy(b.data(), &len, 8);
    Status st = SafetensorsFile::parse(b, "t.safetensors").status();
    EXPECT_EQ(st.code(), ErrorCode::kCorruptFile);
    EXPECT_NE(st.message().find("100 MB"), std::string::npos) << st.message();
  }
  std::vector<uint8_t> b(64, ' ');
  const uint64_t len = 1000;  // within the limit but past the end of the file
  std::memcpy(b.data(), &len, 8);
  EXPECT_NE(SafetensorsFile::parse(b, "t.safetensors").status().message().find("truncated"), std::string::npos);
}

TEST(SafetensorsReader, BadShapesAndDtypes) {
  expect_error(R"({"a":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}})", 0, "dimension 0");
  expect_error(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, "non-negative");
  expect_error(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4, "dimensions");
  expect_error(R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}})", 4, "overflows");
  expect_error(R"({"a":{"dtype":"F32","shape":[2199023255552],"data_offsets":[0,4]}})", 4, "dimension");
  expect_error(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", 4, "unknown dtype 'Q4'");
  expect_error(R"({"a":{"dtype":"F32","shape":"x","data_offsets":[0,4]}})", 4, "shape");
  expect_error(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4, "non-negative");
  expect_error(R"({"a":{"dtype":"F32","shape":[1]}})", 4, "data_offsets");
  expect_error(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4, "dtype");
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})", 4, "unknown field");
}

TEST(SafetensorsReader, OffsetsOutsideOverlappingHolesAndWrongSizes) {
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4, "outside the data buffer");
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8, "outside the data buffer");
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,0]}})", 8, "outside");
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,-4]}})", 8, "non-negative");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4, "imply 8");
  expect_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               12, "overlaps");
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, "hole");
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
               12, "hole");
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12, "trailing");
}

TEST(SafetensorsReader, DuplicateNamesAndBadJson) {
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
               8, "duplicate key 'a'");
  expect_error(R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 4, "duplicate key 'dtype'");
  expect_error("{\"a\xff\":{}}", 0, "not valid JSON");
  expect_error(std::string(200, '[') + std::string(200, ']'), 0, "start with");
  expect_error("{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}", 0, "nested");
  expect_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})", 4, "not valid JSON");
  expect_error(R"({"__metadata__":{"k":1}})", 0, "__metadata__");
  expect_error(R"({"a":[1,2]})", 0, "not an object");
}

TEST(SafetensorsReader, HeaderPaddingAndEmptyFileOfTensors) {
  EXPECT_TRUE(parse_header(R"({"__metadata__":{}})" + std::string(5, ' '), 0).is_ok());
  EXPECT_TRUE(parse_header("{}", 0).is_ok());
}

}  // namespace
}  // namespace pocket
