// Classification and routing by the model's own probabilities: every label scored as the answer, none
// sampled. The prompt is evaluated once; each label's tokens (and the end of the turn) run as one batched
// pass from that shared prefix, the KV cache truncated back to the prompt after each.
#include <algorithm>
#include <cmath>
#include <set>

#include "task/task.h"
#include "task/task_prompt.h"

namespace pocket {

namespace {

// log of the sum of exp over logits[n]: the softmax's normaliser, in double for long vocabularies.
double log_sum_exp(const float* logits, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, logits[i]);
  if (!std::isfinite(mx)) return mx;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return mx + std::log(sum);
}

Status check_logits(const float* logits, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(logits[i])) return Status(ErrorCode::kNumericalError, "[classify] NaN in the model's logits");
  }
  return Status::ok();
}

}  // namespace

Expected<ClassifyResult> classify_prompt(Session& s, std::span<const int32_t> prompt,
                                         const std::vector<std::string>& labels, const TaskOptions& opts,
                                         double calibration_t) {
  if (labels.empty()) return invalid_argument("[classify] no labels given");
  if (labels.size() > 1024) return invalid_argument("[classify] at most 1024 labels (" + std::to_string(labels.size()) + " given)");
  if (!(calibration_t > 0.0) || !std::isfinite(calibration_t)) {
    return invalid_argument("[classify] the calibration temperature must be a finite number > 0");
  }
  std::set<std::string_view> seen;
  for (const std::string& l : labels) {
    if (l.empty()) return invalid_argument("[classify] a label is empty");
    if (!seen.insert(l).second) return invalid_argument("[classify] label '" + l + "' is given twice");
  }
  const Model& model = s.model();
  const Tokenizer& tok = model.tokenizer();
  const int64_t n_vocab = model.hparams().n_vocab;
  const std::vector<int32_t> stops = stop_token_ids(model);
  std::vector<std::vector<int32_t>> label_ids(labels.size());
  size_t longest = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    POCKET_RETURN_IF_ERROR(tok.encode(labels[i], EncodeOptions{}, &label_ids[i]));
    if (label_ids[i].empty()) return invalid_argument("[classify] label '" + labels[i] + "' tokenizes to nothing");
    longest = std::max(longest, label_ids[i].size());
  }
  Transformer& tr = s.transformer();
  if (static_cast<int64_t>(prompt.size() + longest) > tr.n_ctx()) {
    return Status(ErrorCode::kContextExceeded,
                  "[classify] the prompt (" + std::to_string(prompt.size()) + " tokens) and the longest label (" +
                      std::to_string(longest) + ") exceed the context of " + std::to_string(tr.n_ctx()));
  }

  s.reset();
  GenerateOptions go;
  go.n_predict = 0;
  GenerateStats st;
  POCKET_RETURN_IF_ERROR(s.generate_tokens(prompt, go, nullptr, opts.cancel, &st));
  const int64_t base = s.n_past();
  // The prompt's next-token log-probabilities: the first token of every label is scored from them.
  std::vector<float> first(tr.logits(0), tr.logits(0) + n_vocab);
  POCKET_RETURN_IF_ERROR(check_logits(first.data(), n_vocab));
  const double first_lse = log_sum_exp(first.data(), n_vocab);

  ClassifyResult r;
  r.labels.resize(labels.size());
  const bool batched = tr.shape().n_logit_rows >= static_cast<int64_t>(longest);
  for (size_t li = 0; li < labels.size(); ++li) {
    const std::vector<int32_t>& ids = label_ids[li];
    double lp = first[static_cast<size_t>(ids[0])] - first_lse;
    // Row i scores ids[i + 1]; the last row the end of the answer: any stop token (as generation stops).
    auto score_row = [&](const float* row, size_t i) -> Status {
      POCKET_RETURN_IF_ERROR(check_logits(row, n_vocab));
      const double lse = log_sum_exp(row, n_vocab);
      if (i + 1 < ids.size()) {
        lp += row[ids[i + 1]] - lse;
      } else if (!stops.empty()) {
        double p_stop = 0.0;
        for (int32_t t : stops) p_stop += std::exp(static_cast<double>(row[t]) - lse);
        lp += std::log(p_stop);
      }
      return Status::ok();
    };
    Status fs;
    if (batched) {
      fs = tr.forward(ids, /*all_logits=*/true, opts.cancel);
      for (size_t i = 0; fs.is_ok() && i < ids.size(); ++i) fs = score_row(tr.logits(static_cast<int64_t>(i)), i);
    } else {
      for (size_t i = 0; fs.is_ok() && i < ids.size(); ++i) {
        const int32_t one[1] = {ids[i]};
        fs = tr.forward(one, false, opts.cancel);
        if (fs.is_ok()) fs = score_row(tr.logits(0), i);
      }
    }
    tr.truncate(base);
    POCKET_RETURN_IF_ERROR(fs);
    r.labels[li] = LabelScore{labels[li], 0.0, lp, static_cast<int32_t>(ids.size())};
  }
  // Normalised over the label set, after temperature calibration.
  double mx = -INFINITY;
  for (const LabelScore& l : r.labels) mx = std::max(mx, l.logprob / calibration_t);
  double z = 0.0;
  for (LabelScore& l : r.labels) z += (l.probability = std::exp(l.logprob / calibration_t - mx));
  size_t top = 0, second = labels.size() > 1 ? 1 : 0;
  for (size_t i = 0; i < r.labels.size(); ++i) {
    LabelScore& l = r.labels[i];
    l.probability /= z;
    if (l.probability > 0) r.entropy -= l.probability * std::log(l.probability);
  }
  for (size_t i = 1; i < r.labels.size(); ++i) {
    if (r.labels[i].probability > r.labels[top].probability) top = i;
  }
  for (size_t i = 0; i < r.labels.size(); ++i) {
    if (i != top && (second == top || r.labels[i].probability > r.labels[second].probability)) second = i;
  }
  r.top = r.labels[top].label;
  r.confidence = r.labels[top].probability;
  r.margin = labels.size() > 1 ? r.confidence - r.labels[second].probability : 1.0;
  return r;
}

Expected<ClassifyResult> task_classify(Session& s, std::string_view text, const std::vector<std::string>& labels,
                                       const TaskOptions& opts, std::string_view instruction, double calibration_t) {
  POCKET_ASSIGN_OR_RETURN(std::vector<int32_t> prompt,
                          render_task_prompt(s.model(), task_user_message("classify", text, instruction), opts.system,
                                             opts.chat));
  return classify_prompt(s, prompt, labels, opts, calibration_t);
}

Expected<RouteResult> task_route(Session& s, std::string_view text, double threshold, const TaskOptions& opts,
                                 std::string_view instruction, double calibration_t) {
  if (!(threshold >= 0.0 && threshold <= 1.0)) return invalid_argument("[route] the threshold must be in [0, 1]");
  static const std::vector<std::string> kRoutes = {"local", "cloud"};
  POCKET_ASSIGN_OR_RETURN(std::vector<int32_t> prompt,
                          render_task_prompt(s.model(), task_user_message("route", text, instruction), opts.system,
                                             opts.chat));
  RouteResult r;
  POCKET_ASSIGN_OR_RETURN(r.scores, classify_prompt(s, prompt, kRoutes, opts, calibration_t));
  r.p_local = r.scores.labels[0].probability;
  r.route = r.p_local >= threshold ? "local" : "cloud";
  // How far the decision is from flipping, on [0, 1]: 1 at p_local 0 or 1, 0 at the threshold.
  r.confidence = r.route == "local" ? (threshold < 1.0 ? (r.p_local - threshold) / (1.0 - threshold) : 1.0)
                                    : (threshold > 0.0 ? (threshold - r.p_local) / threshold : 1.0);
  return r;
}

}  // namespace pocket
