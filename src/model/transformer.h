// Transformer: one session's forward-pass state over a shared Model — the KV cache and every scratch
// buffer, all allocated once at creation from the memory plan. forward() allocates nothing.
// Not thread-safe: one Transformer per session; many may share one Model.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/huge_pages.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "model/activation_observer.h"
#include "model/memory_plan.h"
#include "model/model.h"
#include "quant/blocks.h"

namespace pocket {

class Transformer {
 public:
  // Fails with kOutOfMemory before allocating when the plan exceeds `mem_budget_bytes` (0 = no budget).
  static Expected<std::unique_ptr<Transformer>> create(std::shared_ptr<const Model> model, const SessionShape& shape,
                                                       ThreadPool* pool, uint64_t mem_budget_bytes = 0);

  // Runs `tokens` at positions n_past() .. n_past() + n - 1 and appends them to the KV cache. Logits are
  // computed for every row when `all_logits` (n <= n_logit_rows) or for the last row only; prompts longer
  // than n_batch run in chunks of n_batch rows. On error (context exceeded, cancellation, bad token id)
  // the cache is left at its previous length, so the session stays usable.
  Status forward(std::span<const int32_t> tokens, bool all_logits, const std::atomic<bool>* cancel = nullptr);

  // Logits of row `i` of the last forward (row 0 when only the last row was computed). [n_vocab] f32.
  const float* logits(int64_t i = 0) const { return logits_.data() + i * model_->hparams().n_vocab; }
  float* mutable_logits(int64_t i = 0) { return logits_.data() + i * model_->hparams().n_vocab; }

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return shape_.n_ctx; }
  // Forgets every position >= n (speculative rollback, edits). n must be <= n_past().
  void truncate(int64_t n);

  // The residual stream after each of shape().hidden_layers for every row of the last forward chunk (a
  // forward of more than n_batch tokens keeps only its last chunk): [layers][hidden_rows()][n_embd] f32,
  // layer i at hidden_states() + i * hidden_rows() * n_embd. hidden_rows() is 0 when the shape names no
  // layers, before the first forward and after a failed one. A block drafter reads them (drafter.h).
  const float* hidden_states() const { return hidden_.data(); }
  int64_t hidden_rows() const { return hidden_rows_; }

  // Reports every weight matrix's input to `o` during forward() (nullptr: off, the default). Not owned; it
  // must outlive its use. Only calibration tools set one.
  void set_observer(ActivationObserver* o) { observer_ = o; }

  const Model& model() const { return *model_; }
  const SessionShape& shape() const { return shape_; }
  const MemoryPlan& plan() const { return plan_; }

 private:
  Transformer(std::shared_ptr<const Model> m, const SessionShape& s, ThreadPool* p);
  Status forward_chunk(const int32_t* tokens, int64_t m, float* logits_out, bool all_logits,
                       const std::atomic<bool>* cancel);
  void attention(int64_t layer, int64_t m);  // float32 reference path
  void qkv_fast(int64_t layer, int64_t m);   // bias, q/k norm, RoPE and the f16 cache write via kernels

  std::shared_ptr<const Model> model_;
  SessionShape shape_;
  ThreadPool* pool_;
  MemoryPlan plan_;
  int64_t n_past_ = 0;
  ActivationObserver* observer_ = nullptr;  // not owned
  // f32 KV cache (the reference path): [n_layers][n_ctx][n_kv_heads * head_dim].
  std::vector<float> k_cache_, v_cache_;
  // f16 [n_layers][n_kv_heads][n_ctx][head_dim] (head-major within a layer, so a kv head's attention walk
  // is one contiguous run), in 2 MiB pages (core/huge_pages.h).
  HugeBuffer k_cache16_, v_cache16_;
  uint16_t* k16() const { return reinterpret_cast<uint16_t*>(k_cache16_.data()); }
  uint16_t* v16() const { return reinterpret_cast<uint16_t*>(v_cache16_.data()); }
  int64_t kv16_head_stride() const { return shape_.n_ctx * model_->hparams().head_dim; }  // elements
  std::vector<float> tiles_;           // residual product tiles (Q8G32 weights; kernels::Scratch)
  std::vector<quant::ActBlock> xq_;  // [n_batch][act_blocks(max width)] int8 activations
  // Scratch, sized by scratch_sizes(): row-major [n_batch, width] activations.
  std::vector<float> x_, xb_, xb2_, q_, k_, v_, hb_, hb2_;
  std::vector<float> att_;      // [n_threads][n_ctx] attention scores
  std::vector<float> rope_cs_, rope_sn_;  // [n_batch][head_dim / 2]: the chunk's rotary angles (fast path)
  std::vector<float> row_buf_;  // [n_threads][max width] dequantised weight rows
  std::vector<float> logits_;   // [n_logit_rows][n_vocab]
  std::vector<float> hidden_;   // [hidden_layers][n_batch][n_embd] (compact for the chunk's rows)
  int64_t hidden_rows_ = 0;
};

}  // namespace pocket
