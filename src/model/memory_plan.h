// The memory plan of a session: every byte the runtime will hold, computed before anything is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/hparams.h"

namespace pocket {

class Package;

// Rows per forward pass when a session does not choose (n_batch = 0). 128 rows keep the GEMM kernels at
// full speed (each weight block is reused from L2 by 128 activation rows) while the activation buffers stay
// a quarter of what 512 rows need (pocket-0.3b: 5.4 MiB instead of 21.8 MiB of peak memory).
inline constexpr int64_t kDefaultBatch = 128;

struct SessionShape {
  int64_t n_ctx = 0;      // KV cache positions
  int64_t n_batch = 0;    // rows processed per forward pass (prefill chunk)
  int64_t n_threads = 1;
  int64_t n_logit_rows = 1;  // rows whose logits can be requested at once
  bool kv_f16 = false;       // KV cache in f16 (quantised/f16 models) or f32 (the float32 reference)
  bool residual_act = false;  // some matrix is Q8G32: int8 activations plus their residual (kernels.h)
  // Layers whose output (the residual stream after the layer) forward() keeps for every row of a chunk, for
  // drafters conditioned on the target's hidden states (Transformer::hidden_states()). Increasing, each in
  // [0, n_layers); empty: none.
  std::vector<int32_t> hidden_layers{};
};

struct MemoryPlan {
  uint64_t weights = 0;      // mapped package bytes (file-backed, shared between sessions)
  uint64_t kv_cache = 0;     // [2][n_layers][n_ctx][n_kv_heads * head_dim] f16 or f32
  uint64_t activations = 0;  // per-pass scratch: residual, norms, q/k/v, attention, FFN
  uint64_t logits = 0;       // [n_logit_rows][n_vocab] f32 plus the sampler's candidates
  uint64_t session_total() const { return kv_cache + activations + logits; }
  uint64_t total() const { return weights + session_total(); }
  std::string to_string() const;
};

// Exact sizes of every buffer a Session allocates for this shape (the Session allocates from this plan).
struct ScratchSizes {
  int64_t x, xb, xb2, q, k, v, hb, hb2, att, row_buf, logits, candidates;  // in floats (candidates: entries)
  int64_t rope;        // the batch's rotary cosines and sines, in floats (kernels::rope_angles)
  int64_t act_blocks;  // int8 activation blocks (40 bytes each)
  int64_t tiles;       // per-thread residual product tiles, in floats (0 without residual_act)
  int64_t hidden;      // [hidden_layers][n_batch][n_embd] kept layer outputs, in floats
};
ScratchSizes scratch_sizes(const HParams& h, const SessionShape& s);
MemoryPlan make_memory_plan(const HParams& h, const SessionShape& s, uint64_t package_bytes);

// SessionShape::kv_f16 for a package: an all-f32 model runs the float32 reference end to end (f32 KV cache,
// scalar operators); any matrix in another dtype selects the dispatched kernels with an f16 KV cache. Used by
// sessions and by `pocket plan`, so both state the same bytes.
bool kv_cache_f16(const Package& pkg);
// SessionShape::residual_act for a package: some 2-D tensor is Q8G32.
bool residual_activations(const Package& pkg);

}  // namespace pocket
