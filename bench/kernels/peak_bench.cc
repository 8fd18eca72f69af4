// The machine's arithmetic ceilings, for judging kernel rates: independent chains of one instruction, as many
// as keep its pipes busy (12 accumulators; the loop overhead is one add and a branch per 12). Written in inline
// assembly so the compiler neither spills the accumulators nor needs the ISA flags; skipped (with a message)
// where the CPU lacks the instruction. Counters: instructions per second and the multiply-adds they do.
#include <benchmark/benchmark.h>

#include <cstdint>

namespace {

#if defined(__x86_64__)
#define POCKET_X12(op, r)                                                                            \
  op " %%" r "14, %%" r "15, %%" r "0\n\t" op " %%" r "14, %%" r "15, %%" r "1\n\t"                   \
  op " %%" r "14, %%" r "15, %%" r "2\n\t" op " %%" r "14, %%" r "15, %%" r "3\n\t"                   \
  op " %%" r "14, %%" r "15, %%" r "4\n\t" op " %%" r "14, %%" r "15, %%" r "5\n\t"                   \
  op " %%" r "14, %%" r "15, %%" r "6\n\t" op " %%" r "14, %%" r "15, %%" r "7\n\t"                   \
  op " %%" r "14, %%" r "15, %%" r "8\n\t" op " %%" r "14, %%" r "15, %%" r "9\n\t"                   \
  op " %%" r "14, %%" r "15, %%" r "10\n\t" op " %%" r "14, %%" r "15, %%" r "11\n\t"
#define POCKET_CLOBBER "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11"

void report(benchmark::State& state, int64_t instr_per_iter, double macs_per_instr) {
  const double n = static_cast<double>(state.iterations()) * static_cast<double>(instr_per_iter);
  state.counters["G instr/s"] = benchmark::Counter(n / 1e9, benchmark::Counter::kIsRate);
  state.counters["G MAC/s"] = benchmark::Counter(n * macs_per_instr / 1e9, benchmark::Counter::kIsRate);
}

// VPDPBUSD ymm: 32 u8 x s8 products summed into 8 int32 lanes (what the VNNI matmul kernels issue).
void BM_peak_vpdpbusd_ymm(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512vl")) {
    state.SkipWithError("no AVX-512 VNNI on this CPU");
    return;
  }
  for (auto _ : state) {
    for (int i = 0; i < 1000; ++i) __asm__ volatile(POCKET_X12("vpdpbusd", "ymm")::: POCKET_CLOBBER);
  }
  report(state, 12000, 32.0);
}

// VFMADD231PS ymm: 8 float multiply-adds (the float kernels and attention).
void BM_peak_fma_ymm(benchmark::State& state) {
  if (!__builtin_cpu_supports("fma") || !__builtin_cpu_supports("avx2")) {
    state.SkipWithError("no AVX2/FMA on this CPU");
    return;
  }
  for (auto _ : state) {
    for (int i = 0; i < 1000; ++i) __asm__ volatile(POCKET_X12("vfmadd231ps", "ymm")::: POCKET_CLOBBER);
  }
  report(state, 12000, 8.0);
}

// The same on zmm (64 products, 16 float multiply-adds): cores that split 512-bit operations (Zen 4) run
// them at half the ymm instruction rate, cores with two 512-bit ports (Intel Xeon) at the same rate.
void BM_peak_vpdpbusd_zmm(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512vnni")) {
    state.SkipWithError("no AVX-512 VNNI on this CPU");
    return;
  }
  for (auto _ : state) {
    for (int i = 0; i < 1000; ++i) __asm__ volatile(POCKET_X12("vpdpbusd", "zmm")::: POCKET_CLOBBER);
  }
  report(state, 12000, 64.0);
}

void BM_peak_fma_zmm(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("no AVX-512 on this CPU");
    return;
  }
  for (auto _ : state) {
    for (int i = 0; i < 1000; ++i) __asm__ volatile(POCKET_X12("vfmadd231ps", "zmm")::: POCKET_CLOBBER);
  }
  report(state, 12000, 16.0);
}

BENCHMARK(BM_peak_vpdpbusd_ymm);
BENCHMARK(BM_peak_fma_ymm);
BENCHMARK(BM_peak_vpdpbusd_zmm);
BENCHMARK(BM_peak_fma_zmm);
#endif

}  // namespace
