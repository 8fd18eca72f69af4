// StopMatcher against a direct search: for random texts, stop sets and ways of splitting the text into
// pieces, what is emitted is the text up to the first stop string to appear, and never more at any point.
#include <gtest/gtest.h>

#include <random>

#include "server/stop_matcher.h"

namespace pocket::server {
namespace {

// What a client should receive when generation delivers `pieces` in order: generation stops after the
// first piece whose arrival makes the text contain a stop string, and the text is cut where the earliest
// stop string in it starts. (Stop strings are checked as text arrives, as the model produces it.)
std::string expected_output(const std::vector<std::string>& pieces, const std::vector<std::string>& stops,
                            bool* stopped) {
  std::string text;
  *stopped = false;
  for (const auto& p : pieces) {
    text += p;
    size_t first = std::string::npos;
    for (const auto& s : stops) first = std::min(first, text.find(s));
    if (first != std::string::npos) {
      *stopped = true;
      return text.substr(0, first);
    }
  }
  return text;
}

TEST(StopMatcher, RandomTextsAndSplitsMatchDirectSearch) {
  std::mt19937 rng(42);
  const std::string alphabet = "abc\n";
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text;
    const int len = static_cast<int>(rng() % 40);
    for (int i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
    std::vector<std::string> stops;
    const int n_stops = static_cast<int>(rng() % 4);
    for (int s = 0; s < n_stops; ++s) {
      std::string stop;
      const int slen = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < slen; ++i) stop += alphabet[rng() % alphabet.size()];
      stops.push_back(stop);
    }
    std::vector<std::string> pieces;
    for (size_t pos = 0; pos < text.size();) {
      const size_t n = std::min(text.size() - pos, static_cast<size_t>(1 + rng() % 5));
      pieces.push_back(text.substr(pos, n));
      pos += n;
    }
    bool want_stopped = false;
    const std::string want = expected_output(pieces, stops, &want_stopped);
    StopMatcher m(stops);
    std::string got;
    for (const auto& p : pieces) {
      got += m.push(p);
      // Never ahead of what the client may see.
      ASSERT_EQ(want.compare(0, got.size(), got), 0) << "text '" << text << "' emitted '" << got << "'";
      if (m.stopped()) break;
    }
    got += m.flush();
    EXPECT_EQ(got, want) << "text '" << text << "'";
    EXPECT_EQ(m.stopped(), want_stopped) << "text '" << text << "'";
  }
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("hello"), "hello");
  EXPECT_EQ(m.push(" world"), " world");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, HoldsBackAPossibleStartOfAStopString) {
  StopMatcher m({"</end>"});
  EXPECT_EQ(m.push("value </e"), "value ");
  EXPECT_EQ(m.push("nd> more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("later"), "");
  StopMatcher n({"</end>"});
  EXPECT_EQ(n.push("a </e"), "a ");
  EXPECT_EQ(n.push("x"), "</ex");  // not a stop after all: released
  EXPECT_FALSE(n.stopped());
}

TEST(StopMatcher, MultiByteStopStrings) {
  StopMatcher m({"。"});
  EXPECT_EQ(m.push("你好"), "你好");
  EXPECT_EQ(m.push("世界。再见"), "世界");
  EXPECT_TRUE(m.stopped());
}

}  // namespace
}  // namespace pocket::server
