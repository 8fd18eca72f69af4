// Attention over an f16 KV cache at pocket-0.3b's shape (16 query heads, 4 kv heads, head_dim 64), for a
// decode row, a speculative verify batch (8 rows) and a prefill chunk (128 rows), shallow and deep. Two ways
// to split the same work, one thread, side by side: the pool wrapper's blocks of rows of one kv head (each
// key/value tile converted once for the block) and one row per call (the tile converted for every row, as
// before the blocks). Counter: GFLOP/s of the scores and the weighted sum (4 * rows * heads * keys * head_dim).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace pocket::kernels {
namespace {

struct Case {
  AttentionShape s;
  std::vector<float> q, out;
  std::vector<uint16_t> k, v;
  double flops = 0.0;
};

Case make_case(int64_t m, int64_t pos0) {
  Case c;
  c.s = AttentionShape{m, pos0, 16, 4, 64, 0.125f};
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 1.0f);
  c.q.resize(static_cast<size_t>(m * 16 * 64));
  c.out.resize(c.q.size());
  for (auto& x : c.q) x = d(rng);
  c.k.resize(static_cast<size_t>((pos0 + m) * 4 * 64));
  c.v.resize(c.k.size());
  for (auto& x : c.k) x = f32_to_f16(d(rng));
  for (auto& x : c.v) x = f32_to_f16(d(rng));
  for (int64_t i = 0; i < m; ++i) c.flops += 4.0 * 16 * static_cast<double>(pos0 + i + 1) * 64;
  return c;
}

void BM_attention_row_blocks(benchmark::State& state) {
  Case c = make_case(state.range(0), state.range(1));
  ThreadPool pool(1);
  for (auto _ : state) {
    attention(pool, c.out.data(), c.q.data(), c.k.data(), c.v.data(), c.s);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(c.flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(active().name));
}

void BM_attention_row_per_call(benchmark::State& state) {
  Case c = make_case(state.range(0), state.range(1));
  const auto fn = active().attention;
  const int64_t tasks = c.s.m * c.s.n_kv_heads;
  for (auto _ : state) {
    for (int64_t t = 0; t < tasks; ++t) fn(c.out.data(), c.q.data(), c.k.data(), c.v.data(), c.s, t, t + 1);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(c.flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(active().name));
}

void attention_shapes(benchmark::internal::Benchmark* b) {
  for (auto [m, pos0] : {std::pair<int64_t, int64_t>{1, 1024}, {8, 64}, {8, 512}, {8, 1024}, {128, 0}, {128, 512}}) {
    b->Args({m, pos0});
  }
  b->ArgNames({"rows", "depth"})->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_attention_row_blocks)->Apply(attention_shapes);
BENCHMARK(BM_attention_row_per_call)->Apply(attention_shapes);

}  // namespace
}  // namespace pocket::kernels
