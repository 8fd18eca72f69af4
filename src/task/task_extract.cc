// Extraction and rewriting: generation under the task's instruction, extraction constrained to a JSON
// schema (valid by construction) and, for grounded properties, to spans of the input text.
#include <cmath>

#include "constrain/json_validate.h"
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
  return Status::ok();
}

// Generates after `prompt` from a fresh session, collecting the text.
Status generate_text(Session& s, std::span<const int32_t> prompt, const TaskOptions& opts, TokenConstraint* constraint,
                     std::string* text, GenerateStats* stats) {
  s.reset();
  GenerateOptions go;
  go.n_predict = opts.max_tokens;
  go.sampling = opts.sampling;
  go.constraint = constraint;
  text->clear();
  const TokenCallback collect = [text](int32_t, std::string_view piece) {
    text->append(piece);
    return true;
  };
  return s.generate_tokens(prompt, go, collect, opts.cancel, stats);
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
                                     const TaskOptions& opts, bool ground_strings, std::string_view instruction) {
  POCKET_RETURN_IF_ERROR(check_task_options(opts, "extract"));
  const Model& model = s.model();
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<TokenConstraint> constraint,
                          make_json_constraint(model, schema_json, text, ground_strings));
  POCKET_ASSIGN_OR_RETURN(std::vector<int32_t> prompt,
                          render_task_prompt(model, task_user_message("extract", text, instruction), opts.system,
                                             opts.chat));
  ExtractResult r;
  ConfidenceTracker tracker(constraint.get());
  POCKET_RETURN_IF_ERROR(generate_text(s, prompt, opts, &tracker, &r.text, &r.stats));
  r.confidence = tracker.result();
  if (!constraint->can_stop()) {
    return Status(ErrorCode::kInternal, "[extract] the constrained answer is incomplete after " +
                                            std::to_string(r.stats.n_generated) + " tokens: " + r.text);
  }
  r.value = nlohmann::ordered_json::parse(r.text, nullptr, /*allow_exceptions=*/false);
  if (r.value.is_discarded()) {
    return Status(ErrorCode::kInternal, "[extract] the constrained answer does not parse as JSON: " + r.text);
  }
  // The independent validator's verdict on what the grammar produced (expected empty).
  // Against the schema as grounded in this text: grounded strings must be spans, grounded numbers its numbers.
  nlohmann::ordered_json schema = schema_json.empty() ? nlohmann::ordered_json::object({{"type", "object"}})
                                              : nlohmann::ordered_json::parse(schema_json, nullptr, false);
  if (!schema.is_discarded()) {
    auto grounded = ground_schema(schema, text, ground_strings);
    r.validation_errors = validate_json(nlohmann::json(grounded ? *grounded : schema), nlohmann::json(r.value), text);
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
