// Energy per typical call (1024 tokens in, 128 out): measured from RAPL where the kernel exposes it,
// otherwise estimated from a documented model and labelled "estimated" (PERFORMANCE.md).
#pragma once

#include <cstdint>
#include <string>

namespace pocket::cli {

// Model constants and their sources (also in docs/performance.md):
//  * kCoreWatts: active power of one x86 server core at full load. AMD EPYC 7763: 280 W TDP / 64 cores
//    = 4.4 W per core (AMD's published TDP and core count). Package uncore power is excluded.
//  * kDramJoulesPerByte: 160 pJ per byte read from DRAM — Horowitz, "Computing's energy problem",
//    ISSCC 2014: 1.3–2.6 nJ per 64-bit DRAM access (we take 1.3 nJ / 8 B).
//  * kPhoneBatteryWh: reference phone battery 4,500 mAh at 3.85 V = 17.3 Wh (a typical 2024 flagship).
inline constexpr double kCoreWatts = 4.4;
inline constexpr double kDramJoulesPerByte = 160e-12;
inline constexpr double kPhoneBatteryWh = 17.3;

struct EnergyEstimate {
  double joules = 0.0;
  double cpu_joules = 0.0;
  double dram_joules = 0.0;
  double seconds = 0.0;
  double battery_fraction = 0.0;  // of kPhoneBatteryWh
  bool measured = false;          // true: RAPL; false: the model above
  std::string method;
};

// The model: time = 1024 / prefill_tps + 128 / decode_tps; CPU energy = time x threads x kCoreWatts;
// DRAM energy = bytes read x kDramJoulesPerByte, bytes = weights x (decode tokens + prefill passes)
// + KV cache reads.
EnergyEstimate estimate_call_energy(double prefill_tps, double decode_tps, int threads, uint64_t weight_bytes,
                                    uint64_t kv_bytes_per_token_per_pos, int64_t n_batch);

// RAPL package energy counter in microjoules, or -1 when unavailable.
int64_t read_rapl_uj();

}  // namespace pocket::cli
