// Windowed teacher-forced evaluation; see text_eval.h.
#include "text_eval.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/thread_pool.h"
#include "model/transformer.h"

namespace pocket::cli {

Expected<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("[eval] cannot read text file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double token_nll(const float* logits, int64_t n, int32_t target) {
  double mx = logits[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return std::log(sum) + mx - static_cast<double>(logits[target]);
}

Status evaluate_text(const std::vector<std::shared_ptr<const Model>>& models, const std::string& text,
                     const TextEvalOptions& opts, const ScoredFn& on_scored, int64_t* n_tokens_out) {
  if (models.empty()) return invalid_argument("[eval] no model");
  const Model& first = *models[0];
  std::vector<int32_t> tokens;
  POCKET_RETURN_IF_ERROR(first.tokenizer().encode(text, {}, &tokens));
  if (opts.max_tokens > 0 && static_cast<int64_t>(tokens.size()) > opts.max_tokens) tokens.resize(static_cast<size_t>(opts.max_tokens));
  const int32_t bos = first.config().add_bos ? first.tokenizer().bos_id() : -1;
  int64_t n_ctx = opts.n_ctx > 0 ? opts.n_ctx : std::min<int64_t>(first.config().context_length, 512);
  for (const auto& m : models) n_ctx = std::min<int64_t>(n_ctx, m->hparams().n_ctx_train);
  if (n_ctx < 2) return invalid_argument("[eval] a window of " + std::to_string(n_ctx) + " tokens scores nothing");
  const int64_t n_batch = std::clamp<int64_t>(opts.n_batch, 1, n_ctx);
  const int n_threads = opts.n_threads > 0 ? opts.n_threads
                                           : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  ThreadPool pool(n_threads);
  SessionShape shape;
  shape.n_ctx = n_ctx;
  shape.n_batch = n_batch;
  shape.n_threads = n_threads;
  shape.n_logit_rows = n_batch;
  std::vector<std::unique_ptr<Transformer>> tfs;
  for (const auto& m : models) {
    POCKET_ASSIGN_OR_RETURN(auto tf, Transformer::create(m, shape, &pool));
    tfs.push_back(std::move(tf));
  }
  tfs[0]->set_observer(opts.observer);
  // Each window: [BOS] + up to n_ctx - 1 text tokens (or n_ctx text tokens without BOS).
  const int64_t per_window = bos >= 0 ? n_ctx - 1 : n_ctx;
  const int64_t n_text = static_cast<int64_t>(tokens.size());
  if (n_text < 2) return invalid_argument("[eval] the text has " + std::to_string(n_text) + " tokens; need at least 2");
  std::vector<int32_t> window;
  std::vector<const float*> rows(models.size());
  int64_t scored = 0;
  for (int64_t start = 0; start < n_text; start += per_window) {
    window.clear();
    if (bos >= 0) window.push_back(bos);
    const int64_t end = std::min(n_text, start + per_window);
    window.insert(window.end(), tokens.begin() + start, tokens.begin() + end);
    const int64_t n = static_cast<int64_t>(window.size());
    if (n < 2) break;
    for (auto& tf : tfs) tf->truncate(0);
    for (int64_t c = 0; c < n - 1; c += n_batch) {  // the last token is only a target
      const int64_t m = std::min(n_batch, n - 1 - c);
      for (auto& tf : tfs) {
        POCKET_RETURN_IF_ERROR(tf->forward(std::span<const int32_t>(window.data() + c, static_cast<size_t>(m)), true));
      }
      for (int64_t i = 0; i < m; ++i) {
        for (size_t k = 0; k < tfs.size(); ++k) rows[k] = tfs[k]->logits(i);
        // With BOS the first target is the window's first text token: predicted from BOS alone; without
        // BOS the first token of a window has no context and is not scored (c + i starts at 0 → target 1).
        on_scored(rows, window[static_cast<size_t>(c + i + 1)]);
        ++scored;
      }
    }
  }
  if (n_tokens_out) *n_tokens_out = scored;
  return Status::ok();
}

}  // namespace pocket::cli
