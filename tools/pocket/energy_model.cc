// Energy model arithmetic and the RAPL reader.
#include "energy_model.h"
#include "model/memory_plan.h"

#include <cmath>
#include <cstdio>

namespace pocket::cli {

EnergyEstimate estimate_call_energy(double prefill_tps, double decode_tps, int threads, uint64_t weight_bytes,
                                    uint64_t kv_bytes_per_pos, int64_t n_batch) {
  const double n_in = 1024, n_out = 128;
  EnergyEstimate e;
  if (prefill_tps <= 0 || decode_tps <= 0) return e;
  e.seconds = n_in / prefill_tps + n_out / decode_tps;
  e.cpu_joules = e.seconds * threads * kCoreWatts;
  const double prefill_passes = std::ceil(n_in / static_cast<double>(n_batch > 0 ? n_batch : kDefaultBatch));
  // Decode step i reads the whole KV cache so far (1024 + i positions).
  double kv_reads = 0;
  for (int i = 0; i < 128; ++i) kv_reads += static_cast<double>(kv_bytes_per_pos) * (n_in + i);
  const double bytes = static_cast<double>(weight_bytes) * (n_out + prefill_passes) + kv_reads;
  e.dram_joules = bytes * kDramJoulesPerByte;
  e.joules = e.cpu_joules + e.dram_joules;
  e.battery_fraction = e.joules / (kPhoneBatteryWh * 3600.0);
  e.method = "estimated: CPU-seconds x 4.4 W/core + DRAM bytes x 160 pJ/B";
  return e;
}

int64_t read_rapl_uj() {
  FILE* f = std::fopen("/sys/class/powercap/intel-rapl:0/energy_uj", "r");
  if (f == nullptr) return -1;
  long long v = -1;
  if (std::fscanf(f, "%lld", &v) != 1) v = -1;
  std::fclose(f);
  return v;
}

}  // namespace pocket::cli
