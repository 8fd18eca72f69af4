// Streaming UTF-8 decoding: any split of any byte string prints what sanitising it whole prints, partial
// characters are held back, and feeding allocates nothing.
#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>

#include "tokenizer/utf8.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// Counting allocator for the whole test binary (only the delta inside a test is looked at).
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
// The nothrow forms too, so every allocation pairs with the free() above (ASan checks the pairing).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace pocket {
namespace {

std::string sanitized(std::string_view s) {
  std::string out;
  append_sanitized_utf8(s, &out);
  return out;
}

TEST(Utf8, SanitiseUsesMaximalSubparts) {
  EXPECT_EQ(sanitized("abc"), "abc");
  EXPECT_EQ(sanitized(std::string("a\0b", 3)), std::string("a\0b", 3));  // NUL is valid
  EXPECT_EQ(sanitized("\xFF"), "\xEF\xBF\xBD");
  EXPECT_EQ(sanitized("\xE4\xBD"), "\xEF\xBF\xBD");                        // truncated: one U+FFFD
  EXPECT_EQ(sanitized("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // lone surrogate: three
  EXPECT_EQ(sanitized("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");            // overlong
  EXPECT_EQ(sanitized("\xF4\x90\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // > U+10FFFF
  EXPECT_EQ(sanitized("\xE4\xBD" "a"), "\xEF\xBF\xBD" "a");
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x99\x82"));
  EXPECT_FALSE(is_valid_utf8("\xED\xBF\xBF"));
}

TEST(Utf8StreamDecoder, HoldsBackPartialCharacters) {
  Utf8StreamDecoder dec;
  EXPECT_EQ(dec.feed("a\xE4"), "a");
  EXPECT_EQ(dec.pending(), 1u);
  EXPECT_EQ(dec.feed("\xBD"), "");
  EXPECT_EQ(dec.feed("\xA0!"), "\xE4\xBD\xA0!");
  EXPECT_EQ(dec.feed("\xF0\x9F"), "");
  EXPECT_EQ(dec.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(dec.pending(), 0u);
  EXPECT_EQ(dec.feed("\xBD"), "\xEF\xBF\xBD");  // a stray continuation byte
}

TEST(Utf8StreamDecoder, AnySplitMatchesWholeSanitise) {
  std::mt19937 rng(1234);
  const std::string atoms[] = {"a", " ", "\xE4\xBD\xA0", "\xF0\x9F\x99\x82", "\xC3\xA9", "\xFF", "\xED\xA0\x80",
                               "\xE4\xBD", "\xF0\x9F", "\x80", "\xC0\xAF", std::string("\0", 1)};
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) s += atoms[rng() % std::size(atoms)];
    Utf8StreamDecoder dec;
    std::string streamed;
    for (size_t i = 0; i < s.size();) {
      const size_t len = std::min<size_t>(s.size() - i, 1 + rng() % 4);
      streamed += dec.feed(std::string_view(s).substr(i, len));
      i += len;
    }
    streamed += dec.flush();
    ASSERT_EQ(streamed, sanitized(s)) << "iteration " << iter;
    ASSERT_TRUE(is_valid_utf8(streamed));
  }
}

TEST(Utf8StreamDecoder, FeedDoesNotAllocate) {
  Utf8StreamDecoder dec;
  const std::string_view pieces[] = {"Hello", " \xE4", "\xBD\xA0", "\xFF", " world", "\xF0\x9F\x99", "\x82"};
  size_t total = 0;
  const long before = g_allocations.load();
  for (int round = 0; round < 1000; ++round) {
    for (std::string_view p : pieces) total += dec.feed(p).size();
  }
  total += dec.flush().size();
  EXPECT_EQ(g_allocations.load() - before, 0);
  EXPECT_GT(total, 0u);
}

}  // namespace
}  // namespace pocket
