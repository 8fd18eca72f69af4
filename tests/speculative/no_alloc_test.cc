// The speculative decode loop allocates nothing per token (DESIGN.md: buffers sized at creation): between
// the first emitted token and the last, with every drafter, the global allocation count does not move.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "spec_fixture.h"

static std::atomic<uint64_t> g_allocs{0};
void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
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

TEST(SpeculativeSession, DecodeLoopAllocatesNothingPerToken) {
  auto model = testing::tiny_model(11);
  for (SpecMethod m : {SpecMethod::kNgram, SpecMethod::kDraftModel}) {
    SpeculativeOptions spec;
    spec.method = m;
    spec.draft_model = model;
    SessionOptions so;
    so.n_threads = 2;
    auto s = SpeculativeSession::create(model, so, spec);
    ASSERT_TRUE(s) << s.status().to_string();
    GenerateOptions go;
    go.n_predict = 60;
    go.stop_at_eos = false;
    go.sampling.temperature = 0.8f;
    go.sampling.repeat_penalty = 1.1f;
    std::vector<uint64_t> at_token;
    at_token.reserve(128);
    const std::vector<int32_t> prompt = {5, 6, 7, 8, 5, 6, 7, 8, 5, 6};
    ASSERT_TRUE((*s)->generate_tokens(prompt, go, [&](int32_t, std::string_view) {
      at_token.push_back(g_allocs.load());
      return true;
    }).is_ok());
    ASSERT_GE(at_token.size(), 60u);
    EXPECT_EQ(at_token[59], at_token[0]) << spec_method_name(m);
    EXPECT_GT((*s)->spec_stats().n_drafted, 0);
  }
}

}  // namespace
}  // namespace pocket
