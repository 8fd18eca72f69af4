// A model read into memory (FileLoad::kRead, `--no-mmap`) computes exactly what the mapped one computes: same
// bytes, same kernels, bit-identical logits, for the float32 reference path and a quantised package.
#include <gtest/gtest.h>

#include <vector>

#include "convert/quantize_model.h"
#include "model/stories_fixture.h"

namespace pocket {
namespace {

std::vector<float> logits(const std::string& package, FileLoad how, const std::vector<int32_t>& ids) {
  OpenOptions o;
  o.load = how;
  return testing::teacher_forced_logits(package, ids, o);
}

TEST(LoadMode, ReadAndMapGiveIdenticalLogits) {
  POCKET_REQUIRE_SHARED_DATA(data);
  const std::vector<int32_t> ids = {1, 403, 407, 261, 378, 425, 394, 267, 380, 286, 312, 395, 430, 260, 397};
  testing::TempDir dir;
  const std::string q4 = dir.file("stories260K-q4.pocket");
  QuantizePolicy policy;
  policy.matrices = DType::kQ4G32;
  ASSERT_TRUE(quantize_model(testing::stories260k_package(), q4, policy).is_ok());
  for (const std::string& pkg : {testing::stories260k_package(), q4}) {
    const auto mapped = logits(pkg, FileLoad::kMap, ids);
    const auto read = logits(pkg, FileLoad::kRead, ids);
    ASSERT_FALSE(mapped.empty());
    ASSERT_EQ(mapped, read) << pkg;
  }
}

}  // namespace
}  // namespace pocket
