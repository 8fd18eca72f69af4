// The speculative decode loop allocates nothing per token (DESIGN.md: buffers sized at creation): between
// the first emitted token and the last, with every drafter, the global allocation count does not move.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

#include "spec_fixture.h"
#include "speculative/block_drafter.h"
#include "speculative/block_drafter_synth.h"

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

// Generates 60 tokens (sampling) from a repetitive prompt and says whether the allocation count moved
// between the first emitted token and the 60th.
void expect_no_allocation_per_token(SpeculativeSession& s, const char* what) {
  GenerateOptions go;
  go.n_predict = 60;
  go.stop_at_eos = false;
  go.sampling.temperature = 0.8f;
  go.sampling.repeat_penalty = 1.1f;
  std::vector<uint64_t> at_token;
  at_token.reserve(128);
  const std::vector<int32_t> prompt = {5, 6, 7, 8, 5, 6, 7, 8, 5, 6};
  ASSERT_TRUE(s.generate_tokens(prompt, go, [&](int32_t, std::string_view) {
    at_token.push_back(g_allocs.load());
    return true;
  }).is_ok());
  ASSERT_GE(at_token.size(), 60u);
  EXPECT_EQ(at_token[59], at_token[0]) << what;
  EXPECT_GT(s.spec_stats().n_drafted, 0) << what;
}

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
    expect_no_allocation_per_token(**s, spec_method_name(m));
  }
}

// A drafter reading the target's hidden states (the block drafter's wiring): prompt lookup proposes, and
// every reported row is read.
class HiddenReadingDrafter final : public BlockDrafter {
 public:
  explicit HiddenReadingDrafter(std::unique_ptr<Drafter> inner) : inner_(std::move(inner)) {}
  const char* name() const override { return "hidden-reading"; }
  Expected<int32_t> propose(std::span<const int32_t> ctx, std::span<int32_t> out) override {
    return inner_->propose(ctx, out);
  }
  void observe(int32_t n_drafted, int32_t n_accepted) override { inner_->observe(n_drafted, n_accepted); }
  std::span<const int32_t> hidden_layers() const override { return layers_; }
  Status observe_hidden(const TargetHiddenStates& hs) override {
    for (int64_t r = 0; r < hs.n_rows; ++r) sum += hs.data[hs.layer_stride + r * hs.n_embd];
    rows += hs.n_rows;
    return Status::ok();
  }
  double sum = 0.0;
  int64_t rows = 0;

 private:
  std::unique_ptr<Drafter> inner_;
  const int32_t layers_[2] = {0, 1};
};

TEST(SpeculativeSession, HiddenStateReportsAllocateNothingPerToken) {
  auto model = testing::tiny_model(11);
  auto ngram = NgramDrafter::create(NgramOptions{});
  ASSERT_TRUE(ngram) << ngram.status().to_string();
  auto owned = std::make_unique<HiddenReadingDrafter>(std::move(*ngram));
  HiddenReadingDrafter* d = owned.get();
  SessionOptions so;
  so.n_threads = 2;
  auto s = SpeculativeSession::create(model, so, SpeculativeOptions{}, std::move(owned));
  ASSERT_TRUE(s) << s.status().to_string();
  expect_no_allocation_per_token(**s, "hidden-state reports");
  EXPECT_EQ(d->rows, (*s)->n_past());  // every context position reported once
  EXPECT_TRUE(std::isfinite(d->sum));
}

// The packaged block drafter (random weights, 4-bit like the target so the dispatched kernels run): its
// features, block pass and drafts allocate nothing either.
TEST(SpeculativeSession, BlockDrafterAllocatesNothingPerToken) {
  auto model = testing::tiny_model(11, DType::kQ4G32);
  testing::TempDir dir;
  const std::string path = dir.file("drafter.pocket");
  BlockDrafterSynthOptions o;
  o.dtype = DType::kQ4G32;
  ASSERT_TRUE(write_random_block_drafter(*model, o, path).is_ok());
  SpeculativeOptions spec;
  spec.method = SpecMethod::kBlock;
  spec.draft_model_path = path;
  spec.fallback.enabled = false;
  SessionOptions so;
  so.n_threads = 2;
  auto s = SpeculativeSession::create(model, so, spec);
  ASSERT_TRUE(s) << s.status().to_string();
  expect_no_allocation_per_token(**s, "block drafter");
}

}  // namespace
}  // namespace pocket
