// Prompt lookup: longest suffix first, most recent match first, bounded by the room left and the request.
#include "speculative/ngram_drafter.h"

#include <gtest/gtest.h>

#include <vector>

namespace pocket {
namespace {

std::vector<int32_t> propose(NgramDrafter& d, const std::vector<int32_t>& ctx, size_t k) {
  std::vector<int32_t> out(k, -1);
  auto n = d.propose(ctx, out);
  EXPECT_TRUE(n);
  out.resize(static_cast<size_t>(*n));
  return out;
}

TEST(NgramDrafter, CopiesWhatFollowedTheSuffix) {
  auto d = NgramDrafter::create({1, 3});
  ASSERT_TRUE(d);
  // "1 2 3 4 5 6 ... 1 2 3" → the continuation "4 5 6".
  EXPECT_EQ(propose(**d, {1, 2, 3, 4, 5, 6, 9, 1, 2, 3}, 3), (std::vector<int32_t>{4, 5, 6}));
  // A copy that runs into the end of the context continues periodically.
  EXPECT_EQ(propose(**d, {7, 8, 9, 7, 8}, 5), (std::vector<int32_t>{9, 7, 8, 9, 7}));
  // No match, no proposal.
  EXPECT_TRUE(propose(**d, {1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(propose(**d, {}, 4).empty());
  EXPECT_TRUE(propose(**d, {5}, 4).empty());
  EXPECT_TRUE(propose(**d, {1, 1}, 0).empty());
}

TEST(NgramDrafter, LongerSuffixWinsThenTheMostRecent) {
  auto d = NgramDrafter::create({1, 3});
  ASSERT_TRUE(d);
  // Suffix "2 3": a 2-gram match (2 3 → 50) beats a more recent 1-gram match (3 → 60).
  EXPECT_EQ(propose(**d, {2, 3, 50, 9, 3, 60, 2, 3}, 1), (std::vector<int32_t>{50}));
  // Two 2-gram matches: the later one.
  EXPECT_EQ(propose(**d, {2, 3, 50, 2, 3, 70, 2, 3}, 1), (std::vector<int32_t>{70}));
  // A run of one token continues itself.
  EXPECT_EQ(propose(**d, {4, 4, 4, 4}, 3), (std::vector<int32_t>{4, 4, 4}));
}

TEST(NgramDrafter, BadSizesRefused) {
  EXPECT_FALSE(NgramDrafter::create({0, 3}));
  EXPECT_FALSE(NgramDrafter::create({3, 2}));
  EXPECT_FALSE(NgramDrafter::create({1, 9}));
  auto bad = NgramDrafter::create({0, 3});
  EXPECT_NE(bad.status().message().find("ngram_min"), std::string::npos);
}

}  // namespace
}  // namespace pocket
