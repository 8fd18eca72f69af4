// Answer scoring and per-(task, language) aggregation (see task_scorer.h).
#include "data/task_scorer.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

namespace pocket::train {
namespace {

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string normalise_label(std::string_view s) {
  std::string out(trim(s));
  while (!out.empty() && (out.back() == '.' || out.back() == ' ')) out.pop_back();
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void flatten(const nlohmann::json& j, const std::string& prefix, std::set<std::string>* out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix + it.key();
    const nlohmann::json& v = it.value();
    if (v.is_null()) continue;
    if (v.is_object()) {
      flatten(v, key + ".", out);
    } else if (v.is_string()) {
      out->insert(key + "=" + v.get<std::string>());
    } else {
      out->insert(key + "=" + v.dump());  // numbers in shortest form, booleans, arrays
    }
  }
}

// The pairs of a JSON object, or false when `text` is not one.
bool json_pairs(std::string_view text, std::set<std::string>* out) {
  nlohmann::json j = nlohmann::json::parse(trim(text), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  flatten(j, "", out);
  return true;
}

std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    uint32_t cp = len == 1 ? c : c & (0xFFu >> (len + 1));
    for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

}  // namespace

double field_f1(std::string_view gold_json, std::string_view pred_json) {
  std::set<std::string> gold, pred;
  if (!json_pairs(gold_json, &gold) || !json_pairs(pred_json, &pred)) return 0.0;
  if (gold.empty() && pred.empty()) return 1.0;
  size_t matched = 0;
  for (const auto& p : pred) matched += gold.count(p);
  if (matched == 0) return 0.0;
  const double precision = static_cast<double>(matched) / static_cast<double>(pred.size());
  const double recall = static_cast<double>(matched) / static_cast<double>(gold.size());
  return 2.0 * precision * recall / (precision + recall);
}

double edit_similarity(std::string_view a, std::string_view b) {
  const auto x = code_points(a), y = code_points(b);
  if (x.empty() && y.empty()) return 1.0;
  std::vector<size_t> row(y.size() + 1);
  for (size_t j = 0; j <= y.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= x.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= y.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (x[i - 1] == y[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return 1.0 - static_cast<double>(row[y.size()]) / static_cast<double>(std::max(x.size(), y.size()));
}

std::string_view task_metric_name(TaskKind task) {
  switch (task) {
    case TaskKind::kExtract:
    case TaskKind::kTool: return "field_f1";
    case TaskKind::kIntent:
    case TaskKind::kRoute: return "accuracy";
    case TaskKind::kRewrite: return "edit_sim";
  }
  return "?";
}

AnswerScore score_answer(TaskKind task, std::string_view gold, std::string_view pred) {
  AnswerScore s;
  switch (task) {
    case TaskKind::kExtract:
    case TaskKind::kTool:
      s.score = field_f1(gold, pred);
      s.exact = s.score == 1.0;
      break;
    case TaskKind::kIntent:
    case TaskKind::kRoute:
      s.exact = normalise_label(gold) == normalise_label(pred);
      s.score = s.exact ? 1.0 : 0.0;
      break;
    case TaskKind::kRewrite:
      s.exact = trim(gold) == trim(pred);
      s.score = edit_similarity(trim(gold), trim(pred));
      break;
  }
  return s;
}

TaskScoreboard::TaskScoreboard() {
  for (TaskKind t : kAllTasks) {
    for (Lang l : kAllLangs) cells_.push_back(CellScore{t, l});
  }
}

AnswerScore TaskScoreboard::add(const TaskExample& gold, std::string_view prediction) {
  const AnswerScore s = score_answer(gold.task, gold.answer, prediction);
  CellScore& c = cells_[static_cast<size_t>(gold.task) * kAllLangs.size() + static_cast<size_t>(gold.lang)];
  ++c.n;
  c.score_sum += s.score;
  c.n_exact += s.exact ? 1 : 0;
  return s;
}

std::vector<CellScore> TaskScoreboard::cells() const {
  std::vector<CellScore> out;
  for (const auto& c : cells_) {
    if (c.n > 0) out.push_back(c);
  }
  return out;
}

int64_t TaskScoreboard::n() const {
  int64_t n = 0;
  for (const auto& c : cells_) n += c.n;
  return n;
}

double TaskScoreboard::exact() const {
  int64_t e = 0;
  for (const auto& c : cells_) e += c.n_exact;
  return n() > 0 ? static_cast<double>(e) / static_cast<double>(n()) : 0.0;
}

double TaskScoreboard::macro_score() const {
  const auto cs = cells();
  double sum = 0.0;
  for (const auto& c : cs) sum += c.score();
  return cs.empty() ? 0.0 : sum / static_cast<double>(cs.size());
}

std::string TaskScoreboard::table() const {
  std::string out = "task     lang       n  metric     score   exact\n";
  char buf[160];
  for (const auto& c : cells()) {
    std::snprintf(buf, sizeof buf, "%-8s %-4s %7lld  %-9s %6.4f  %6.4f\n", std::string(task_name(c.task)).c_str(),
                  std::string(lang_name(c.lang)).c_str(), static_cast<long long>(c.n),
                  std::string(task_metric_name(c.task)).c_str(), c.score(), c.exact());
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "%-8s %-4s %7lld  %-9s %6.4f  %6.4f\n", "overall", "", static_cast<long long>(n()),
                "macro", macro_score(), exact());
  return out + buf;
}

std::string TaskScoreboard::json() const {
  nlohmann::ordered_json j;
  j["n"] = n();
  j["macro_score"] = macro_score();
  j["exact"] = exact();
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (const auto& c : this->cells()) {
    cells.push_back({{"task", task_name(c.task)},
                     {"lang", lang_name(c.lang)},
                     {"n", c.n},
                     {"metric", task_metric_name(c.task)},
                     {"score", c.score()},
                     {"exact", c.exact()}});
  }
  j["cells"] = cells;
  return j.dump(2);
}

}  // namespace pocket::train
