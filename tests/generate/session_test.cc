// Session behaviour: concurrency, allocation-free decode, cancellation, context limits, determinism.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <thread>

#include "convert/synth.h"
#include "generate/session.h"
#include "test_util.h"

// Counts every global allocation in this test binary.
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

std::shared_ptr<const Model> tiny_model() {
  static testing::TempDir dir;
  static std::shared_ptr<const Model> model = [] {
    auto h = architecture_preset("tiny");
    EXPECT_TRUE(h);
    const std::string path = dir.file("tiny.pocket");
    SynthOptions o;
    o.dtype = DType::kF32;
    o.seed = 7;
    EXPECT_TRUE(synthesize_model(*h, path, o).is_ok());
    auto m = Model::load(path);
    EXPECT_TRUE(m) << m.status().to_string();
    return *m;
  }();
  return model;
}

std::vector<int32_t> generate_ids(const std::shared_ptr<const Model>& model, const std::string& prompt,
                                  const GenerateOptions& go, int threads) {
  SessionOptions so;
  so.n_threads = threads;
  auto s = Session::create(model, so);
  EXPECT_TRUE(s) << s.status().to_string();
  std::vector<int32_t> ids;
  Status st = (*s)->generate(prompt, go, [&](int32_t id, std::string_view) {
    if (id >= 0) ids.push_back(id);  // -1: a final text-only flush of an incomplete character
    return true;
  });
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return ids;
}

TEST(Session, TwoSessionsInTwoThreadsMatchSequential) {
  auto model = tiny_model();
  GenerateOptions go;
  go.n_predict = 40;
  go.stop_at_eos = false;
  go.sampling.temperature = 0.9f;
  go.sampling.seed = 42;
  const auto a_seq = generate_ids(model, "hello there", go, 1);
  const auto b_seq = generate_ids(model, "a different prompt", go, 1);
  std::vector<int32_t> a_par, b_par;
  std::thread ta([&] { a_par = generate_ids(model, "hello there", go, 2); });
  std::thread tb([&] { b_par = generate_ids(model, "a different prompt", go, 2); });
  ta.join();
  tb.join();
  EXPECT_EQ(a_seq.size(), 40u);
  EXPECT_EQ(a_par, a_seq);
  EXPECT_EQ(b_par, b_seq);
  EXPECT_NE(a_seq, b_seq);
}

TEST(Session, SameSeedSameTokensAcrossThreadCounts) {
  auto model = tiny_model();
  GenerateOptions go;
  go.n_predict = 32;
  go.stop_at_eos = false;
  go.sampling.temperature = 1.0f;
  go.sampling.top_k = 0;
  go.sampling.top_p = 0.9f;
  go.sampling.seed = 1234;
  const auto one = generate_ids(model, "seed test", go, 1);
  EXPECT_EQ(generate_ids(model, "seed test", go, 1), one);
  EXPECT_EQ(generate_ids(model, "seed test", go, 2), one);
  EXPECT_EQ(generate_ids(model, "seed test", go, 3), one);
  go.sampling.seed = 1235;
  EXPECT_NE(generate_ids(model, "seed test", go, 1), one);
}

TEST(Session, DecodeLoopAllocatesNothingPerToken) {
  auto model = tiny_model();
  SessionOptions so;
  so.n_threads = 2;
  auto s = Session::create(model, so);
  ASSERT_TRUE(s);
  GenerateOptions go;
  go.n_predict = 64;
  go.stop_at_eos = false;
  go.sampling.temperature = 0.8f;
  go.sampling.repeat_penalty = 1.1f;
  std::vector<uint64_t> at_token;
  at_token.reserve(128);
  ASSERT_TRUE((*s)->generate("count allocations", go, [&](int32_t, std::string_view) {
    at_token.push_back(g_allocs.load());
    return true;
  }).is_ok());
  ASSERT_EQ(at_token.size(), 64u);
  // Between the first emitted token and the last, the loop (sample, forward, stream) allocated nothing.
  EXPECT_EQ(at_token.back() - at_token.front(), 0u);
}

TEST(Session, PromptOverContextIsRefusedAndSessionStaysUsable) {
  auto model = tiny_model();
  SessionOptions so;
  so.n_ctx = 32;
  so.n_threads = 1;
  auto s = Session::create(model, so);
  ASSERT_TRUE(s);
  GenerateOptions go;
  go.n_predict = 4;
  const std::string far_over(200, 'x');
  Status st = (*s)->generate(far_over, go, nullptr);
  EXPECT_EQ(st.code(), ErrorCode::kContextExceeded);
  EXPECT_NE(st.message().find("context"), std::string::npos);
  EXPECT_EQ((*s)->n_past(), 0);

  // Exactly at the limit: evaluated, then the context is full.
  std::vector<int32_t> ids(32, 300 - 1);
  GenerateStats stats;
  ASSERT_TRUE((*s)->generate_tokens(ids, go, nullptr, nullptr, &stats).is_ok());
  EXPECT_EQ(stats.stop, StopReason::kContextFull);
  EXPECT_EQ(stats.n_generated, 1);
  // One over: refused.
  (*s)->reset();
  std::vector<int32_t> over(33, 5);
  EXPECT_EQ((*s)->generate_tokens(over, go, nullptr).code(), ErrorCode::kContextExceeded);
  // Still usable.
  EXPECT_TRUE((*s)->generate("ok", go, nullptr).is_ok());
}

TEST(Session, NPredictEdgeValues) {
  auto model = tiny_model();
  auto s = Session::create(model, {});
  ASSERT_TRUE(s);
  GenerateOptions go;
  GenerateStats stats;
  go.n_predict = 0;
  ASSERT_TRUE((*s)->generate("abc", go, nullptr, nullptr, &stats).is_ok());
  EXPECT_EQ(stats.n_generated, 0);
  go.n_predict = -2;
  EXPECT_EQ((*s)->generate("abc", go, nullptr).code(), ErrorCode::kInvalidArgument);
  (*s)->reset();
  go.n_predict = -1;  // until the context is full
  go.stop_at_eos = false;
  ASSERT_TRUE((*s)->generate("abc", go, nullptr, nullptr, &stats).is_ok());
  EXPECT_EQ(stats.stop, StopReason::kContextFull);
  (*s)->reset();
  go.n_predict = 1 << 30;  // huge: bounded by the context
  ASSERT_TRUE((*s)->generate("abc", go, nullptr, nullptr, &stats).is_ok());
  EXPECT_EQ(stats.stop, StopReason::kContextFull);
}

TEST(Session, CancellationDuringPrefillAndDecodeIsPromptAndRecoverable) {
  auto model = tiny_model();
  SessionOptions so;
  so.n_threads = 1;
  auto s = Session::create(model, so);
  ASSERT_TRUE(s);
  GenerateOptions go;
  go.n_predict = 100;
  go.stop_at_eos = false;
  std::atomic<bool> cancel{true};
  // Raised before prefill: nothing is evaluated.
  EXPECT_EQ((*s)->generate("some prompt", go, nullptr, &cancel).code(), ErrorCode::kCancelled);
  EXPECT_EQ((*s)->n_past(), 0);
  // Raised during decode, from the callback after 5 tokens.
  cancel = false;
  int n = 0;
  Status st = (*s)->generate("some prompt", go, [&](int32_t, std::string_view) {
    if (++n == 5) cancel = true;
    return true;
  }, &cancel);
  EXPECT_EQ(st.code(), ErrorCode::kCancelled);
  EXPECT_EQ(n, 5);
  // Usable afterwards, and a fresh run equals a session that never saw the cancellation.
  (*s)->reset();
  cancel = false;
  std::vector<int32_t> after;
  ASSERT_TRUE((*s)->generate("some prompt", go, [&](int32_t id, std::string_view) {
    if (id >= 0) after.push_back(id);
    return after.size() < 10;
  }, &cancel).is_ok());
  go.n_predict = 10;
  EXPECT_EQ(after, generate_ids(model, "some prompt", go, 1));
}

TEST(Session, MemoryBudgetRefusedBeforeAllocation) {
  auto model = tiny_model();
  SessionOptions so;
  so.mem_budget_bytes = 1024;  // far too small
  auto s = Session::create(model, so);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.status().code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(s.status().message().find("kv cache"), std::string::npos);  // the plan is printed
}

TEST(Session, BadOptionsRejected) {
  auto model = tiny_model();
  SessionOptions so;
  so.n_ctx = 1 << 20;  // beyond n_ctx_train
  EXPECT_EQ(Session::create(model, so).status().code(), ErrorCode::kInvalidArgument);
  so.n_ctx = -1;
  EXPECT_EQ(Session::create(model, so).status().code(), ErrorCode::kInvalidArgument);
  auto s = Session::create(model, {});
  ASSERT_TRUE(s);
  GenerateOptions go;
  go.sampling.temperature = NAN;
  EXPECT_EQ((*s)->generate("x", go, nullptr).code(), ErrorCode::kInvalidArgument);
  go.sampling.temperature = -1.0f;
  EXPECT_EQ((*s)->generate("x", go, nullptr).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace pocket
