// GEMV (decode, m = 1) and GEMM (prefill, m = 512) at pocket-0.3b shapes for each weight dtype, 1 and 2
// threads. GEMV cycles through enough copies of the matrix to exceed the last-level cache, so bytes come from
// DRAM as in real decode; counters: weight GB/s (bytes_per_second) and GFLOP/s (2 * rows * n per row of X).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <random>
#include <vector>

#include "core/huge_pages.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "quant/quantize.h"

namespace pocket::kernels {
namespace {

constexpr uint64_t kColdBytes = 256ull << 20;  // > 32 MiB L3 of the development machine, by far

// The copies lie end to end in one 2 MiB-aligned mapping with transparent huge pages requested, as a
// package's weights do when mapped from a cold page cache or read with --no-mmap (core/huge_pages.h).
struct Weights {
  std::vector<const uint8_t*> copies;
  uint64_t bytes = 0;
  HugePageMapping storage;
};

const Weights& weights(DType t, int64_t rows, int64_t n, bool cold) {
  static std::map<std::tuple<int, int64_t, int64_t, bool>, std::unique_ptr<Weights>> cache;
  auto& slot = cache[{static_cast<int>(t), rows, n, cold}];
  if (slot) return *slot;
  slot = std::make_unique<Weights>();
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> f(static_cast<size_t>(rows * n));
  for (auto& v : f) v = dist(rng);
  const uint64_t shape[2] = {static_cast<uint64_t>(rows), static_cast<uint64_t>(n)};
  slot->bytes = *tensor_bytes(t, shape);
  std::vector<uint8_t> q(slot->bytes);
  (void)quant::quantize_tensor(t, f.data(), rows, n, q);
  const uint64_t n_copies = cold ? std::max<uint64_t>(1, (kColdBytes + slot->bytes - 1) / slot->bytes) : 1;
  auto mem = map_huge_aligned(n_copies * slot->bytes);
  if (!mem) std::abort();  // out of memory in a benchmark
  slot->storage = *mem;  // never unmapped: the cache lives as long as the process
  for (uint64_t c = 0; c < n_copies; ++c) {
    std::memcpy(slot->storage.data + c * slot->bytes, q.data(), q.size());
    slot->copies.push_back(slot->storage.data + c * slot->bytes);
  }
  return *slot;
}

ThreadPool& pool(int threads) {
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  auto& p = pools[threads];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return *p;
}

// cold: weights from DRAM (copies beyond the last-level cache); by default only GEMV streams them.
void run_matmul(benchmark::State& state, DType t, int64_t m, bool hot = false, bool force_cold = false) {
  const int64_t rows = state.range(0), n = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const bool cold = force_cold || (m == 1 && !hot);
  const Weights& w = weights(t, rows, n, cold);
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * n)), y(static_cast<size_t>(m * rows));
  for (auto& v : x) v = dist(rng);
  ThreadPool& p = pool(threads);
  const bool residual = residual_activations(t);  // Q8G32: int8 activations plus their residual
  std::vector<ActBlock> xq(static_cast<size_t>(act_scratch_blocks(residual, m, n)));
  std::vector<float> tiles(residual ? static_cast<size_t>(threads * residual_tile_floats(m)) : 0);
  size_t c = 0;
  for (auto _ : state) {
    matmul(p, y.data(), MatrixView{w.copies[c], t, rows, n}, x.data(), Scratch{xq.data(), tiles.data()}, m);
    c = c + 1 == w.copies.size() ? 0 : c + 1;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * w.bytes));
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(m * rows * n) * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
  state.SetLabel(std::string(active().name) + " " + std::string(dtype_name(t)));
}

// Plain read bandwidth over the same pool and the same cold-buffer size, so GEMV GB/s can be quoted as a
// fraction of a roofline measured in the same run (the machine's bandwidth moves with its load).
void BM_read_bandwidth(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  static std::vector<uint64_t> buf(kColdBytes / 8, 1);
  ThreadPool& p = pool(threads);
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  for (auto _ : state) {
    p.run(static_cast<int64_t>(buf.size()), [&](int64_t b, int64_t e, int t) {
      uint64_t a[8] = {};
      for (int64_t i = b; i + 8 <= e; i += 8) {
        for (int k = 0; k < 8; ++k) a[k] += buf[static_cast<size_t>(i + k)];
      }
      sums[static_cast<size_t>(t)] = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
    }, 4096);
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kColdBytes));
}
BENCHMARK(BM_read_bandwidth)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);

void shapes(benchmark::internal::Benchmark* b, bool with_head) {
  for (int threads : {1, 2}) {
    b->Args({1024, 1024, threads});
    b->Args({2816, 1024, threads});
    b->Args({1024, 2816, threads});
    if (with_head) b->Args({65536, 1024, threads});
  }
  b->ArgNames({"rows", "n", "threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}
void gemv_shapes(benchmark::internal::Benchmark* b) { shapes(b, true); }
void gemm_shapes(benchmark::internal::Benchmark* b) { shapes(b, false); }

void BM_gemv_q4g32(benchmark::State& s) { run_matmul(s, DType::kQ4G32, 1); }
void BM_gemv_q4g64(benchmark::State& s) { run_matmul(s, DType::kQ4G64, 1); }
void BM_gemv_q4g32a(benchmark::State& s) { run_matmul(s, DType::kQ4G32A, 1); }
void BM_gemv_q8g32(benchmark::State& s) { run_matmul(s, DType::kQ8G32, 1); }
void BM_gemv_f16(benchmark::State& s) { run_matmul(s, DType::kF16, 1); }
void BM_gemv_q4g32r8(benchmark::State& s) { run_matmul(s, DType::kQ4G32R8, 1); }
void BM_gemm8_q4g32(benchmark::State& s) { run_matmul(s, DType::kQ4G32, 8); }
void BM_gemm8_q4g32r8(benchmark::State& s) { run_matmul(s, DType::kQ4G32R8, 8); }
// A speculative verify pass's matmuls: 8 rows against weights streamed from DRAM, as in the model.
void BM_gemm8_cold_q4g32r8(benchmark::State& s) { run_matmul(s, DType::kQ4G32R8, 8, false, true); }
void BM_gemm512_q4g32(benchmark::State& s) { run_matmul(s, DType::kQ4G32, 512); }
void BM_gemm512_q4g32r8(benchmark::State& s) { run_matmul(s, DType::kQ4G32R8, 512); }
void BM_gemm512_q4g64(benchmark::State& s) { run_matmul(s, DType::kQ4G64, 512); }
void BM_gemm512_q8g32(benchmark::State& s) { run_matmul(s, DType::kQ8G32, 512); }
void BM_gemm512_f16(benchmark::State& s) { run_matmul(s, DType::kF16, 512); }

// Hot: a 256 x 1024 matrix that stays in L2, one thread: the kernel's compute rate without DRAM (what it
// could stream at if memory kept up), for comparing kernel versions on a noisy machine.
void BM_gemv_hot_q4g32(benchmark::State& s) { run_matmul(s, DType::kQ4G32, 1, true); }
void BM_gemv_hot_q4g64(benchmark::State& s) { run_matmul(s, DType::kQ4G64, 1, true); }
void BM_gemv_hot_q8g32(benchmark::State& s) { run_matmul(s, DType::kQ8G32, 1, true); }
void BM_gemv_hot_q4g32r8(benchmark::State& s) { run_matmul(s, DType::kQ4G32R8, 1, true); }
void BM_gemm64_hot_q4g32(benchmark::State& s) { run_matmul(s, DType::kQ4G32, 64, true); }
void BM_gemm64_hot_q8g32(benchmark::State& s) { run_matmul(s, DType::kQ8G32, 64, true); }
void BM_gemm64_hot_q4g32r8(benchmark::State& s) { run_matmul(s, DType::kQ4G32R8, 64, true); }
void BM_gemm8_hot_q4g32r8(benchmark::State& s) { run_matmul(s, DType::kQ4G32R8, 8, true); }
void hot_shape(benchmark::internal::Benchmark* b) {
  b->Args({256, 1024, 1})->ArgNames({"rows", "n", "threads"})->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_gemv_hot_q4g32)->Apply(hot_shape);
BENCHMARK(BM_gemv_hot_q4g64)->Apply(hot_shape);
BENCHMARK(BM_gemv_hot_q8g32)->Apply(hot_shape);
BENCHMARK(BM_gemv_hot_q4g32r8)->Apply(hot_shape);
BENCHMARK(BM_gemm64_hot_q4g32)->Apply(hot_shape);
BENCHMARK(BM_gemm64_hot_q8g32)->Apply(hot_shape);
BENCHMARK(BM_gemm64_hot_q4g32r8)->Apply(hot_shape);
BENCHMARK(BM_gemm8_hot_q4g32r8)->Apply(hot_shape);

BENCHMARK(BM_gemv_q4g32)->Apply(gemv_shapes);
BENCHMARK(BM_gemv_q4g64)->Apply(gemv_shapes);
BENCHMARK(BM_gemv_q4g32a)->Apply(gemv_shapes);
BENCHMARK(BM_gemv_q8g32)->Apply(gemv_shapes);
BENCHMARK(BM_gemv_f16)->Apply(gemv_shapes);
BENCHMARK(BM_gemv_q4g32r8)->Apply(gemv_shapes);
BENCHMARK(BM_gemm8_q4g32)->Apply(gemm_shapes);
BENCHMARK(BM_gemm8_q4g32r8)->Apply(gemm_shapes);
BENCHMARK(BM_gemm8_cold_q4g32r8)->Apply(gemv_shapes);
BENCHMARK(BM_gemm512_q4g32)->Apply(gemm_shapes);
BENCHMARK(BM_gemm512_q4g32r8)->Apply(gemm_shapes);
BENCHMARK(BM_gemm512_q4g64)->Apply(gemm_shapes);
BENCHMARK(BM_gemm512_q8g32)->Apply(gemm_shapes);
BENCHMARK(BM_gemm512_f16)->Apply(gemm_shapes);

}  // namespace
}  // namespace pocket::kernels

BENCHMARK_MAIN();
