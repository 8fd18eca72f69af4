// Draft-model drafting: vocabulary check, prefix reuse of the draft's KV cache, greedy drafting.
#include "speculative/draft_model_drafter.h"
#include "model/memory_plan.h"

#include <algorithm>

namespace pocket {

namespace {
std::string quoted(std::string_view s) {
  std::string q = "\"";
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      q += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      q += "\\x";
      q += hex[c >> 4];
      q += hex[c & 15];
    }
  }
  return q + "\"";
}
// The draft's session: a cache of min(n_ctx, its trained context) positions, one logit row.
SessionShape draft_shape(const Model& draft, int64_t n_ctx) {
  SessionShape shape;
  shape.n_ctx = std::min<int64_t>(n_ctx > 0 ? n_ctx : draft.config().context_length, draft.hparams().n_ctx_train);
  shape.n_batch = std::min<int64_t>(shape.n_ctx, kDefaultBatch);
  shape.n_logit_rows = 1;
  return shape;
}

}  // namespace

Status check_vocab_compatible(const Model& target, const Model& draft, const std::string& label) {
  const std::string where = "[speculative] draft model " + label + ": ";
  const int64_t nt = target.hparams().n_vocab, nd = draft.hparams().n_vocab;
  if (nt != nd) {
    return invalid_argument(where + "its vocabulary has " + std::to_string(nd) + " tokens, the target's " +
                            std::to_string(nt) + "; a draft model must share the target's tokenizer");
  }
  const Tokenizer& a = target.tokenizer();
  const Tokenizer& b = draft.tokenizer();
  if (a.n_vocab() != b.n_vocab()) {
    return invalid_argument(where + "its tokenizer has " + std::to_string(b.n_vocab()) + " tokens, the target's " +
                            std::to_string(a.n_vocab()));
  }
  if (a.bos_id() != b.bos_id() || a.eos_id() != b.eos_id()) {
    return invalid_argument(where + "BOS/EOS ids " + std::to_string(b.bos_id()) + "/" + std::to_string(b.eos_id()) +
                            " differ from the target's " + std::to_string(a.bos_id()) + "/" +
                            std::to_string(a.eos_id()));
  }
  for (int32_t id = 0; id < a.n_vocab(); ++id) {
    if (a.token_bytes(id) != b.token_bytes(id) || a.piece_text(id) != b.piece_text(id)) {
      return invalid_argument(where + "token " + std::to_string(id) + " is " + quoted(b.piece_text(id)) +
                              " in the draft and " + quoted(a.piece_text(id)) +
                              " in the target; a draft model must share the target's tokenizer");
    }
  }
  return Status::ok();
}

Expected<std::unique_ptr<DraftModelDrafter>> DraftModelDrafter::create(std::shared_ptr<const Model> draft,
                                                                        const Model& target, int64_t n_ctx,
                                                                        ThreadPool* pool, const std::string& label) {
  if (draft == nullptr || pool == nullptr) return invalid_argument("[speculative] draft model or pool is null");
  POCKET_RETURN_IF_ERROR(check_vocab_compatible(target, *draft, label));
  const SessionShape shape = draft_shape(*draft, n_ctx);
  std::unique_ptr<DraftModelDrafter> d(new DraftModelDrafter());
  POCKET_ASSIGN_OR_RETURN(d->tf_, Transformer::create(draft, shape, pool));
  d->model_ = std::move(draft);
  d->evaluated_.reserve(static_cast<size_t>(d->tf_->n_ctx()));
  return d;
}

void DraftModelDrafter::reset() {
  tf_->truncate(0);
  evaluated_.clear();
}

int32_t DraftModelDrafter::argmax() const {
  const float* l = tf_->logits(0);
  const int64_t n = model_->hparams().n_vocab;
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (l[i] > l[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

Expected<int32_t> DraftModelDrafter::propose(std::span<const int32_t> ctx, std::span<int32_t> out) {
  const int64_t len = static_cast<int64_t>(ctx.size());
  const int64_t n_ctx = tf_->n_ctx();
  // Drafting k tokens evaluates the context plus k - 1 of them.
  const int64_t k = std::min<int64_t>(static_cast<int64_t>(out.size()), n_ctx - len + 1);
  if (k <= 0 || len == 0) return 0;
  // Keep the shared prefix, but always re-evaluate at least the last context token: its logits are needed.
  int64_t keep = 0;
  const int64_t n_eval = static_cast<int64_t>(evaluated_.size());
  while (keep < n_eval && keep < len - 1 && evaluated_[static_cast<size_t>(keep)] == ctx[static_cast<size_t>(keep)]) {
    ++keep;
  }
  tf_->truncate(keep);
  evaluated_.resize(static_cast<size_t>(keep));  // shrinking never reallocates
  Status st = tf_->forward(ctx.subspan(static_cast<size_t>(keep)), /*all_logits=*/false);
  if (!st.is_ok()) {
    reset();
    return st;
  }
  evaluated_.insert(evaluated_.end(), ctx.begin() + keep, ctx.end());
  for (int64_t i = 0; i < k; ++i) {
    const int32_t next = argmax();
    out[static_cast<size_t>(i)] = next;
    if (i + 1 == k) break;  // the last draft token is not needed in the draft's cache
    const int32_t one[1] = {next};
    st = tf_->forward(one, false);
    if (!st.is_ok()) {
      reset();
      return st;
    }
    evaluated_.push_back(next);
  }
  return static_cast<int32_t>(k);
}

MemoryPlan DraftModelDrafter::plan_for(const Model& draft, int64_t n_ctx, int64_t n_threads) {
  SessionShape shape = draft_shape(draft, n_ctx);
  shape.n_threads = std::max<int64_t>(n_threads, 1);  // as Transformer::create completes the shape
  shape.kv_f16 = kv_cache_f16(draft.package());
  shape.residual_act = residual_activations(draft.package());
  return make_memory_plan(draft.hparams(), shape, draft.package().file_size());
}

const MemoryPlan& DraftModelDrafter::plan() const { return tf_->plan(); }

}  // namespace pocket
