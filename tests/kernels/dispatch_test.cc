// Dispatch: the active table is the best available one, and every table fills every entry.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "kernels/kernels.h"

namespace pocket::kernels {
namespace {

TEST(Dispatch, EveryTableIsComplete) {
  ASSERT_GE(n_available(), 1);
  EXPECT_EQ(available(0).name, "ref");
  for (int i = 0; i < n_available(); ++i) {
    const KernelTable& k = available(i);
    std::printf("kernel table %d: %.*s\n", i, static_cast<int>(k.name.size()), k.name.data());
    EXPECT_TRUE(k.matmul_q8g32 && k.matmul_q4g32 && k.matmul_q4g64 && k.matmul_q4g32a && k.matmul_f32 &&
                k.matmul_f16 && k.quantize_act && k.rmsnorm && k.softmax && k.rope && k.swiglu && k.attention &&
                k.f32_to_f16)
        << k.name;
  }
}

TEST(Dispatch, ActiveIsTheBestUnlessForced) {
  const char* forced = std::getenv("POCKET_KERNELS");
  if (forced != nullptr) GTEST_SKIP() << "POCKET_KERNELS=" << forced;
  EXPECT_EQ(active().name, available(n_available() - 1).name);
}

}  // namespace
}  // namespace pocket::kernels
