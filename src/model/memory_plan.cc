// Memory plan arithmetic.
#include "model/memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "format/package.h"
#include "kernels/kernels.h"
#include "quant/blocks.h"

namespace pocket {

ScratchSizes scratch_sizes(const HParams& h, const SessionShape& s) {
  ScratchSizes z{};
  const int64_t m = s.n_batch;
  z.x = m * h.n_embd;
  z.xb = m * std::max(h.n_embd, h.q_dim());
  z.xb2 = m * std::max(h.n_embd, h.q_dim());
  z.q = m * h.q_dim();
  z.k = m * h.kv_dim();
  z.v = m * h.kv_dim();
  z.hb = m * h.n_ff;
  z.hb2 = m * h.n_ff;
  z.att = s.n_threads * s.n_ctx;
  z.rope = m * (h.head_dim / 2) * 2;
  z.row_buf = s.n_threads * std::max({h.n_embd, h.n_ff, h.q_dim()});
  z.logits = s.n_logit_rows * h.n_vocab;
  z.candidates = h.n_vocab;
  z.act_blocks = kernels::act_scratch_blocks(s.residual_act, m, std::max({h.n_embd, h.n_ff, h.q_dim()}));
  z.tiles = s.residual_act ? s.n_threads * kernels::residual_tile_floats(m) : 0;
  z.hidden = static_cast<int64_t>(s.hidden_layers.size()) * m * h.n_embd;
  return z;
}

MemoryPlan make_memory_plan(const HParams& h, const SessionShape& s, uint64_t package_bytes) {
  MemoryPlan p;
  p.weights = package_bytes;
  p.kv_cache = 2ull * h.n_layers * s.n_ctx * h.kv_dim() * (s.kv_f16 ? 2 : 4);
  const ScratchSizes z = scratch_sizes(h, s);
  const int64_t floats = z.x + z.xb + z.xb2 + z.q + z.k + z.v + z.hb + z.hb2 + z.att + z.rope + z.row_buf + z.tiles +
                       z.hidden;
  p.activations = sizeof(float) * static_cast<uint64_t>(floats) +
                  sizeof(quant::ActBlock) * static_cast<uint64_t>(z.act_blocks);
  // Candidates: one (id, logit) pair per vocabulary entry; plus the recent-token ring for penalties.
  p.logits = sizeof(float) * static_cast<uint64_t>(z.logits) + 8ull * z.candidates;
  return p;
}

std::string MemoryPlan::to_string() const {
  auto mib = [](uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "weights (mapped)  %10.2f MiB\n"
                "kv cache          %10.2f MiB\n"
                "activations       %10.2f MiB\n"
                "logits+sampler    %10.2f MiB\n"
                "session total     %10.2f MiB\n"
                "total             %10.2f MiB\n",
                mib(weights), mib(kv_cache), mib(activations), mib(logits), mib(session_total()), mib(total()));
  return buf;
}

bool kv_cache_f16(const Package& pkg) {
  for (const auto& t : pkg.tensors()) {
    if (t.shape.size() == 2 && t.dtype != DType::kF32) return true;
  }
  return false;
}

bool residual_activations(const Package& pkg) {
  for (const auto& t : pkg.tensors()) {
    if (t.shape.size() == 2 && kernels::residual_activations(t.dtype)) return true;
  }
  return false;
}

}  // namespace pocket
