// Writer -> reader round trip of a small package.
#include <gtest/gtest.h>

#include <cstring>

#include "format/package.h"
#include "format/package_writer.h"
#include "test_util.h"

namespace pocket {
namespace {

TEST(PackageRoundTrip, WriterOutputIsAcceptedAndFaithful) {
  testing::TempDir dir;
  PackageWriter w;
  w.set_descriptor(R"({"family":"llama"})");
  w.set_inference_config(R"({"context_length":16})");
  w.set_tokenizer({1, 2, 3});
  std::vector<float> a = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  ASSERT_TRUE(w.add_tensor("a", DType::kF32, {2, 3},
                           std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(a.data()), 24)).is_ok());
  std::vector<uint8_t> b(10 * 2, 7);
  ASSERT_TRUE(w.add_tensor("b", DType::kF16, {10}, b).is_ok());
  const std::string path = dir.file("m.pocket");
  ASSERT_TRUE(w.write(path).is_ok());

  OpenOptions opts;
  opts.verify_tensor_data = true;
  auto pkg = Package::open(path, opts);
  ASSERT_TRUE(pkg.has_value()) << pkg.status().to_string();
  EXPECT_EQ(pkg->descriptor_json(), R"({"family":"llama"})");
  EXPECT_EQ(pkg->config_json(), R"({"context_length":16})");
  ASSERT_EQ(pkg->tokenizer_bytes().size(), 3u);
  ASSERT_EQ(pkg->tensors().size(), 2u);
  const TensorInfo* ta = pkg->find("a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ta->data) % 64, 0u);
  EXPECT_EQ(std::memcmp(ta->data, a.data(), 24), 0);
  const TensorInfo* tb = pkg->find("b");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->dtype, DType::kF16);
  EXPECT_EQ(tb->size, 20u);
  EXPECT_TRUE(pkg->verify_checksums().is_ok());
}

}  // namespace
}  // namespace pocket
