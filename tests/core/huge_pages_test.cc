// HugeBuffer, the KV cache's memory: zero-filled, 2 MiB aligned, writable over its whole size, and owned
// (moving hands the mapping over; the moved-from buffer is empty and unmapping happens once).
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

#include "core/huge_pages.h"

namespace pocket {
namespace {

TEST(HugeBuffer, ZeroFilledAlignedAndWritable) {
  for (uint64_t bytes : {uint64_t{1}, uint64_t{4096}, uint64_t{3} << 20, (uint64_t{5} << 20) + 123}) {
    auto b = HugeBuffer::allocate(bytes);
    ASSERT_TRUE(b.has_value()) << b.status().message();
    ASSERT_NE(b->data(), nullptr);
    EXPECT_EQ(b->size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % kHugePageBytes, 0u);
    uint64_t nonzero = 0;
    for (uint64_t i = 0; i < bytes; i += 512) nonzero += b->data()[i] != 0;
    EXPECT_EQ(nonzero, 0u) << bytes;
    b->data()[0] = 1;
    b->data()[bytes - 1] = 2;
    EXPECT_EQ(b->data()[bytes - 1], 2);
  }
}

TEST(HugeBuffer, MoveTransfersOwnership) {
  auto a = HugeBuffer::allocate(uint64_t{3} << 20);
  ASSERT_TRUE(a.has_value());
  uint8_t* p = a->data();
  p[100] = 7;
  HugeBuffer b = std::move(*a);
  EXPECT_EQ(a->data(), nullptr);
  EXPECT_EQ(a->size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[100], 7);
  HugeBuffer c;
  c = std::move(b);  // c held nothing; b is emptied
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(b.data(), nullptr);
  auto d = HugeBuffer::allocate(4096);
  ASSERT_TRUE(d.has_value());
  c = std::move(*d);  // c's old mapping is released, d's taken
  EXPECT_NE(c.data(), nullptr);
  EXPECT_EQ(c.size(), 4096u);
}

}  // namespace
}  // namespace pocket
