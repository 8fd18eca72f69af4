// Extraction and rewriting: generation under the task's instruction, extraction constrained to a JSON
// schema (valid by construction) and, for grounded properties, to spans of the input text.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

#include "constrain/json_validate.h"
#include "task/answer_confidence.h"
#include "task/schema_grounding.h"
#include "task/task.h"
#include "task/task_prompt.h"

namespace pocket {

namespace {

Status check_task_options(const TaskOptions& opts, const char* where) {
  if (opts.max_tokens < 1 || opts.max_tokens > 1 << 20) {
    return invalid_argument(std::string("[") + where + "] max_tokens must be in 1..1048576 (" +
                            std::to_string(opts.max_tokens) + " given)");
  }
  if (opts.beams < 0 || opts.beams > 16) {
    return invalid_argument(std::string("[") + where + "] beams must be in 0..16 (" +
                            std::to_string(opts.beams) + " given; 0 = the default)");
  }
  if (opts.beams > 1 && opts.sampling.temperature > 0.0f) {
    return invalid_argument(std::string("[") + where +
                            "] beams > 1 is a search for the most probable answer: it needs "
                            "greedy decoding (temperature 0)");
  }
  return Status::ok();
}

// Generates after `prompt` from a fresh session, collecting the text.
Status generate_text(Session& s, std::span<const int32_t> prompt, const TaskOptions& opts,
                     TokenConstraint* constraint, std::string* text, GenerateStats* stats,
                     std::vector<int32_t>* ids = nullptr) {
  GenerateOptions go;
  go.n_predict = opts.max_tokens;
  go.sampling = opts.sampling;
  go.constraint = constraint;
  text->clear();
  if (ids != nullptr) ids->clear();
  const TokenCallback collect = [text, ids](int32_t id, std::string_view piece) {
    text->append(piece);
    if (ids != nullptr && id >= 0) ids->push_back(id);
    return true;
  };
  if (opts.generate) return opts.generate(prompt, go, collect, opts.cancel, stats);
  s.reset();
  return s.generate_tokens(prompt, go, collect, opts.cancel, stats);
}

// Where a JSON text stands, byte by byte: enough to tell a scalar value (string, number, literal) from the
// structure around it (braces, keys, colons, commas).
struct JsonScan {
  enum Pos : uint8_t { kValue, kKey, kColon, kAfter };
  std::vector<char> stack;  // '{' / '['
  Pos pos = kValue;         // what comes next outside a string or scalar
  bool in_str = false, esc = false, key = false, in_scalar = false;

  void feed(char ch) {
    if (in_str) {
      if (esc)
        esc = false;
      else if (ch == '\\')
        esc = true;
      else if (ch == '"')
        in_str = false, pos = key ? kColon : kAfter;
      return;
    }
    if (in_scalar) {
      if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '.' ||
          ch == '+' || ch == '-') {
        return;
      }
      in_scalar = false;
      pos = kAfter;
    }
    switch (ch) {
      case '{':
        stack.push_back('{'), pos = kKey;
        break;
      case '[':
        stack.push_back('['), pos = kValue;
        break;
      case '}':
      case ']':
        if (!stack.empty()) stack.pop_back();
        pos = kAfter;
        break;
      case ':':
        pos = kValue;
        break;
      case ',':
        pos = !stack.empty() && stack.back() == '{' ? kKey : kValue;
        break;
      case '"':
        in_str = true, key = pos == kKey;
        break;
      case ' ':
      case '\n':
      case '\t':
      case '\r':
        break;
      default:
        if (pos == kValue) in_scalar = true;
        break;
    }
  }
  // A scalar value is being written or may start next: the part of the answer the search explores.
  bool in_value() const { return (in_str && !key) || in_scalar || (!in_str && pos == kValue); }
};

// Beam search over constrained answers, value by value (TaskOptions::beams, docs/tasks.md "Beam search").
// The structure (keys, which optional fields appear, commas and braces) is decoded greedily, as without
// beams. Where a scalar value starts, up to `width` alternatives are kept, ranked by log p(tokens | prompt)
// under the model's own softmax over the whole vocabulary; an alternative whose value has closed (the
// token that ends it included) waits, and once no open alternative is still more probable than the best
// closed one (log-probabilities only fall), that one is kept and greedy decoding goes on from it. So a value
// is the most probable one the beams find with its terminator — "尚菊岚" rather than a "尚菊" that greedy
// decoding closed after two characters, the price 89 rather than the 1.8 whose first token looked likelier.
// Each beam owns a KV cache (a slot: the session's Transformer or one created on its workers) holding the
// prompt and exactly its tokens, and its own constraint; a beam's first surviving child inherits both,
// another child gets a free slot (truncated to the prefix it shares, the rest re-run) and a constraint
// replayed over its tokens.
using ConstraintFactory = std::function<Expected<std::unique_ptr<TokenConstraint>>()>;
// The default under greedy decoding: on pocket-nano's open-value dev split 2, 3 and 4 beams scored alike
// (docs/tasks.md, "Beam search"), and 2 costs least.
constexpr int32_t kDefaultExtractBeams = 2;

Status beam_extract(Session& s, std::span<const int32_t> prompt, const TaskOptions& opts,
                    const ConstraintFactory& make_constraint, std::string* text, std::vector<int32_t>* ids,
                    GenerateStats* stats, AnswerConfidence* conf) {
  using Clock = std::chrono::steady_clock;
  const size_t width = static_cast<size_t>(opts.beams);
  const Tokenizer& tok = s.model().tokenizer();
  const int32_t n_vocab = static_cast<int32_t>(s.model().hparams().n_vocab);
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  struct Slot {
    std::unique_ptr<Transformer> owned;
    Transformer* t = nullptr;
    std::vector<int32_t> toks;  // answer tokens evaluated after the prompt
    bool primed = false, used = false;
  };
  struct Beam {
    std::vector<int32_t> toks;
    double score = 0.0;  // log p(toks | prompt), nothing masked
    std::unique_ptr<TokenConstraint> c;
    int32_t slot = -1;
    JsonScan scan;
    double v_score = 0.0;  // score and length where the value being searched began
    size_t v_len = 0;
    double min_p = 1.0, sum_lp = 0.0, sum_ent = 0.0;  // over the allowed distributions (answer_confidence.h)
    bool stopped = false;  // ended by a stop token where the constraint could stop (a number at the root)
  };
  struct Cand {
    size_t parent;
    int32_t tok;
    double score, lp_allowed, entropy;
  };
  const auto t0 = Clock::now();
  s.reset();
  std::vector<Slot> slots(width + 1);  // the live beams and the best closed one
  slots[0].t = &s.transformer();
  SessionShape shape = s.transformer().shape();
  shape.n_ctx = std::min<int64_t>(shape.n_ctx, n_prompt + opts.max_tokens + 1);
  shape.hidden_layers.clear();
  auto prime = [&](Slot& sl) -> Status {
    if (sl.t == nullptr) {
      POCKET_ASSIGN_OR_RETURN(sl.owned, Transformer::create(s.shared_model(), shape, s.pool()));
      sl.t = sl.owned.get();
    }
    if (!sl.primed) {
      sl.t->truncate(0);
      POCKET_RETURN_IF_ERROR(sl.t->forward(prompt, false, opts.cancel));
      sl.primed = true;
      sl.toks.clear();
    }
    return Status::ok();
  };
  POCKET_RETURN_IF_ERROR(prime(slots[0]));
  stats->n_prompt = n_prompt;
  stats->prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto t1 = Clock::now();
  double constraint_s = 0.0;
  std::vector<float> buf(static_cast<size_t>(n_vocab));
  std::vector<int32_t> order;
  // Where the constraint can stop but need not, the session's greedy decoding may pick a stop token; so may
  // the search (tok -1 below: the best of them, not counted in the confidence, as the tracker does).
  std::vector<int32_t> stop_ids;
  if (tok.eos_id() >= 0) stop_ids.push_back(tok.eos_id());
  for (int32_t id : s.model().config().stop_tokens) stop_ids.push_back(id);
  auto finished = [](const Beam& b) { return b.stopped || b.c->done(); };

  // The `k` most probable allowed next tokens of `b` (k = 1: the greedy choice, lowest id on ties).
  auto expand = [&](const Beam& b, size_t parent, size_t k, std::vector<Cand>* out) -> Status {
    const float* logits = slots[static_cast<size_t>(b.slot)].t->logits(0);
    std::copy(logits, logits + n_vocab, buf.begin());
    const double raw_lse = log_sum_exp(buf.data(), n_vocab);
    const auto tc = Clock::now();
    POCKET_RETURN_IF_ERROR(
        b.c->mask(buf.data(), n_vocab, opts.max_tokens - static_cast<int64_t>(b.toks.size())));
    constraint_s += std::chrono::duration<double>(Clock::now() - tc).count();
    const double allowed_lse = log_sum_exp(buf.data(), n_vocab);
    if (!std::isfinite(allowed_lse))
      return Status(ErrorCode::kInternal, "[extract] the constraint allows no token");
    double entropy = 0.0;
    order.clear();
    for (int32_t i = 0; i < n_vocab; ++i) {
      const float l = buf[static_cast<size_t>(i)];
      if (l == -INFINITY) continue;
      entropy -= std::exp(l - allowed_lse) * (l - allowed_lse);
      order.push_back(i);
    }
    k = std::min(k, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](int32_t x, int32_t y) {
                        const float lx = buf[static_cast<size_t>(x)], ly = buf[static_cast<size_t>(y)];
                        return lx > ly || (lx == ly && x < y);
                      });
    for (size_t j = 0; j < k; ++j) {
      const double l = buf[static_cast<size_t>(order[j])];
      out->push_back({parent, order[j], b.score + (l - raw_lse), l - allowed_lse, entropy});
    }
    if (b.c->can_stop() && !stop_ids.empty()) {
      float ls = -INFINITY;
      for (int32_t id : stop_ids) {
        if (id >= 0 && id < n_vocab) ls = std::max(ls, logits[id]);
      }
      if (std::isfinite(ls)) out->push_back({parent, -1, b.score + (ls - raw_lse), 0.0, 0.0});
    }
    return Status::ok();
  };
  // The child of `p` with `cd`'s token: `inherit` moves p's constraint and slot into it.
  auto child = [&](Beam& p, const Cand& cd, bool inherit) -> Expected<Beam> {
    Beam nb;
    nb.toks = p.toks;
    nb.score = cd.score;
    nb.scan = p.scan;
    nb.v_score = p.v_score;
    nb.v_len = p.v_len;
    nb.min_p = p.min_p;
    nb.sum_lp = p.sum_lp;
    nb.sum_ent = p.sum_ent;
    nb.stopped = cd.tok < 0;
    if (!nb.stopped) {
      nb.toks.push_back(cd.tok);
      for (char ch : tok.token_bytes(cd.tok)) nb.scan.feed(ch);
      nb.min_p = std::min(p.min_p, std::exp(cd.lp_allowed));
      nb.sum_lp += cd.lp_allowed;
      nb.sum_ent += cd.entropy;
    }
    const auto tc = Clock::now();
    if (inherit) {
      nb.c = std::move(p.c);
      nb.slot = p.slot;
      p.slot = -1;
    } else {
      POCKET_ASSIGN_OR_RETURN(nb.c, make_constraint());
      for (int32_t id : p.toks) POCKET_RETURN_IF_ERROR(nb.c->accept(id));
    }
    if (!nb.stopped) POCKET_RETURN_IF_ERROR(nb.c->accept(cd.tok));
    constraint_s += std::chrono::duration<double>(Clock::now() - tc).count();
    return nb;
  };
  // Brings the beam's cache to its tokens: one token on an inherited slot, else a free slot re-run from
  // the longest prefix it shares.
  auto place = [&](Beam& b) -> Status {
    if (b.slot >= 0) {
      Slot& sl = slots[static_cast<size_t>(b.slot)];
      POCKET_RETURN_IF_ERROR(sl.t->forward(std::span<const int32_t>(&b.toks.back(), 1), false, opts.cancel));
      sl.toks = b.toks;
      return Status::ok();
    }
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!slots[i].used) {
        b.slot = static_cast<int32_t>(i);
        break;
      }
    }
    if (b.slot < 0) return Status(ErrorCode::kInternal, "[extract] beam search ran out of caches");
    Slot& sl = slots[static_cast<size_t>(b.slot)];
    sl.used = true;
    POCKET_RETURN_IF_ERROR(prime(sl));
    size_t lcp = 0;
    while (lcp < sl.toks.size() && lcp + 1 < b.toks.size() && sl.toks[lcp] == b.toks[lcp]) ++lcp;
    sl.t->truncate(n_prompt + static_cast<int64_t>(lcp));
    POCKET_RETURN_IF_ERROR(sl.t->forward(std::span<const int32_t>(b.toks).subspan(lcp), false, opts.cancel));
    sl.toks = b.toks;
    return Status::ok();
  };
  auto release = [&](Beam& b) {
    if (b.slot >= 0) slots[static_cast<size_t>(b.slot)].used = false;
    b.slot = -1;
  };

  Beam cur;
  POCKET_ASSIGN_OR_RETURN(cur.c, make_constraint());
  cur.slot = 0;
  slots[0].used = true;
  // Values of different lengths compare by log-probability per token (the terminator included): the total
  // favours the shortest span ("沈" over "沈曦", "," over an order number), which is the wrong answer.
  auto per_token = [](double logp, size_t n) { return logp / static_cast<double>(std::max<size_t>(n, 1)); };
  auto value_rate = [&](const Beam& b) {
    return per_token(b.score - b.v_score, b.toks.size() + (b.stopped ? 1 : 0) - b.v_len);
  };
  std::vector<Cand> cands;
  while (!finished(cur) && static_cast<int64_t>(cur.toks.size()) < opts.max_tokens) {
    if (opts.cancel != nullptr && opts.cancel->load(std::memory_order_relaxed)) {
      s.reset();
      return Status(ErrorCode::kCancelled, "[extract] cancelled");
    }
    if (!cur.scan.in_value()) {  // structure: the greedy token
      cands.clear();
      POCKET_RETURN_IF_ERROR(expand(cur, 0, 1, &cands));
      const Cand& pick = cands.size() > 1 && cands[1].score > cands[0].score ? cands[1] : cands[0];
      POCKET_ASSIGN_OR_RETURN(Beam nb, child(cur, pick, true));
      cur = std::move(nb);
      if (!finished(cur)) POCKET_RETURN_IF_ERROR(place(cur));
      continue;
    }
    // A value: search until the best closed alternative beats every open one.
    cur.v_score = cur.score;
    cur.v_len = cur.toks.size();
    std::vector<Beam> open;
    open.push_back(std::move(cur));
    Beam best;  // the best closed alternative (none while best.c is null)
    bool have_best = false;
    while (!open.empty()) {
      if (opts.cancel != nullptr && opts.cancel->load(std::memory_order_relaxed)) {
        s.reset();
        return Status(ErrorCode::kCancelled, "[extract] cancelled");
      }
      cands.clear();
      for (size_t i = 0; i < open.size(); ++i) POCKET_RETURN_IF_ERROR(expand(open[i], i, width, &cands));
      std::stable_sort(cands.begin(), cands.end(),
                       [](const Cand& x, const Cand& y) { return x.score > y.score; });
      if (cands.size() > width) cands.resize(width);
      std::vector<Beam> next;
      std::vector<char> inherited(open.size(), 0);
      for (const Cand& cd : cands) {
        if (have_best &&
            per_token(cd.score - open[cd.parent].v_score,
                      open[cd.parent].toks.size() + 1 - open[cd.parent].v_len) <= value_rate(best)) {
          break;  // sorted, and every open beam has as many tokens: none after it is ahead either
        }
        Beam& p = open[cd.parent];
        const bool inherit = !inherited[cd.parent];
        inherited[cd.parent] = 1;
        POCKET_ASSIGN_OR_RETURN(Beam nb, child(p, cd, inherit));
        next.push_back(std::move(nb));
      }
      for (Beam& b : open) release(b);  // parents whose slot no child inherited
      open.clear();
      for (Beam& nb : next) {
        const bool closed =
            !nb.scan.in_value() || finished(nb) || static_cast<int64_t>(nb.toks.size()) >= opts.max_tokens;
        if (closed) {
          if (have_best && value_rate(nb) <= value_rate(best)) {
            release(nb);
            continue;
          }
          if (have_best) release(best);
          if (!finished(nb)) POCKET_RETURN_IF_ERROR(place(nb));
          best = std::move(nb);
          have_best = true;
        } else {
          POCKET_RETURN_IF_ERROR(place(nb));
          open.push_back(std::move(nb));
        }
      }
      if (have_best) {  // drop open alternatives already less probable than the best closed one
        std::vector<Beam> keep;
        for (Beam& b : open) {
          if (value_rate(b) > value_rate(best))
            keep.push_back(std::move(b));
          else
            release(b);
        }
        open = std::move(keep);
      }
    }
    if (!have_best) return Status(ErrorCode::kInternal, "[extract] beam search lost every alternative");
    cur = std::move(best);
  }
  stats->decode_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  stats->constraint_seconds = constraint_s;
  s.reset();  // the session's history does not describe its cache after a search
  *text = tok.decode(cur.toks);
  *ids = cur.toks;
  stats->n_generated = static_cast<int64_t>(cur.toks.size());
  stats->n_constrained = stats->n_generated;
  stats->stop = cur.c->done() ? StopReason::kConstraintDone
                : cur.stopped ? StopReason::kStopToken
                              : StopReason::kLength;
  if (!cur.c->can_stop()) return Status::ok();  // the caller reports the incomplete answer
  conf->n_tokens = stats->n_generated;
  if (conf->n_tokens > 0) {
    conf->min_token_probability = cur.min_p;
    conf->mean_token_logprob = cur.sum_lp / static_cast<double>(conf->n_tokens);
    conf->mean_entropy = cur.sum_ent / static_cast<double>(conf->n_tokens);
    conf->sequence_logprob = cur.score;
  }
  return Status::ok();
}

}  // namespace

std::vector<nlohmann::ordered_json> numbers_in_text(std::string_view text) {
  std::vector<nlohmann::ordered_json> out;
  size_t i = 0;
  auto digit = [&](size_t k) { return k < text.size() && text[k] >= '0' && text[k] <= '9'; };
  while (i < text.size() && out.size() < 64) {
    if (!digit(i)) {
      ++i;
      continue;
    }
    const size_t b = i;
    while (digit(i)) ++i;
    size_t e = i;
    if (i + 1 < text.size() && text[i] == '.' && digit(i + 1)) {
      ++i;
      while (digit(i)) ++i;
      e = i;
    }
    std::string_view num = text.substr(b, e - b);
    // Leading zeros (an order number 007) are not a JSON number; at most 15 significant digits.
    if (num.size() > 1 && num[0] == '0' && num[1] != '.') continue;
    if (num.size() > 16) continue;
    const bool negative = b > 0 && text[b - 1] == '-' && (b < 2 || !(text[b - 2] >= '0' && text[b - 2] <= '9'));
    const double v = std::stod(std::string(num)) * (negative ? -1.0 : 1.0);
    nlohmann::ordered_json j;
    if (v == std::floor(v) && std::fabs(v) < 9.0e15) j = static_cast<int64_t>(v);
    else j = v;
    if (std::find(out.begin(), out.end(), j) == out.end()) out.push_back(std::move(j));
  }
  return out;
}

Expected<ExtractResult> task_extract(Session& s, std::string_view text, std::string_view schema_json,
                                     const TaskOptions& opts, bool ground_strings,
                                     std::string_view instruction) {
  POCKET_RETURN_IF_ERROR(check_task_options(opts, "extract"));
  const Model& model = s.model();
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<TokenConstraint> constraint,
                          make_json_constraint(model, schema_json, text, ground_strings));
  POCKET_ASSIGN_OR_RETURN(
      std::vector<int32_t> prompt,
      render_task_prompt(model, task_user_message("extract", text, instruction), opts.system, opts.chat));
  ExtractResult r;
  bool can_stop = false;
  const bool greedy = !(opts.sampling.temperature > 0.0f);
  const int32_t beams = opts.beams > 0 ? opts.beams : greedy ? kDefaultExtractBeams : 1;
  if (beams > 1) {
    TaskOptions bo = opts;
    bo.beams = beams;
    const ConstraintFactory factory = [&] {
      return make_json_constraint(model, schema_json, text, ground_strings);
    };
    POCKET_RETURN_IF_ERROR(beam_extract(s, prompt, bo, factory, &r.text, &r.tokens, &r.stats, &r.confidence));
    can_stop = r.stats.stop == StopReason::kConstraintDone || r.confidence.n_tokens > 0;
  } else {
    ConfidenceTracker tracker(constraint.get());
    POCKET_RETURN_IF_ERROR(generate_text(s, prompt, opts, &tracker, &r.text, &r.stats, &r.tokens));
    r.confidence = tracker.result();
    can_stop = constraint->can_stop();
  }
  if (!can_stop) {
    return Status(ErrorCode::kInternal, "[extract] the constrained answer is incomplete after " +
                                            std::to_string(r.stats.n_generated) + " tokens: " + r.text);
  }
  r.value = nlohmann::ordered_json::parse(r.text, nullptr, /*allow_exceptions=*/false);
  if (r.value.is_discarded()) {
    return Status(ErrorCode::kInternal, "[extract] the constrained answer does not parse as JSON: " + r.text);
  }
  // The independent validator's verdict on what the grammar produced (expected empty).
  // Against the schema as grounded in this text: grounded strings must be spans, grounded numbers its
  // numbers.
  nlohmann::ordered_json schema = schema_json.empty()
                                      ? nlohmann::ordered_json::object({{"type", "object"}})
                                      : nlohmann::ordered_json::parse(schema_json, nullptr, false);
  if (!schema.is_discarded()) {
    auto grounded = ground_schema(schema, text, ground_strings);
    r.validation_errors =
        validate_json(nlohmann::json(grounded ? *grounded : schema), nlohmann::json(r.value), text);
  }
  return r;
}

Expected<RewriteResult> task_rewrite(Session& s, std::string_view text, const TaskOptions& opts,
                                     std::string_view instruction) {
  POCKET_RETURN_IF_ERROR(check_task_options(opts, "rewrite"));
  POCKET_ASSIGN_OR_RETURN(std::vector<int32_t> prompt,
                          render_task_prompt(s.model(), task_user_message("rewrite", text, instruction), opts.system,
                                             opts.chat));
  RewriteResult r;
  POCKET_RETURN_IF_ERROR(generate_text(s, prompt, opts, nullptr, &r.text, &r.stats));
  return r;
}

}  // namespace pocket
