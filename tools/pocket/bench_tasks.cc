// Per-task speculative bench: every example's user turn rendered as a chat prompt (as `pocket run --chat`),
// generated greedily by a plain and a speculative session in the same process, alternating which goes first,
// per-example decode time the median over the runs. Reports per task (and per language) the plain and
// speculative decode rates, the speed-up, tokens per target pass, tau (tokens per speculating pass), the
// acceptance rate and the passes decoded plainly, and whether every output equals plain decoding.
#include "bench_tasks.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "bench_spec.h"
#include "commands.h"
#include "generate/chat_prompt.h"
#include "generate/session.h"
#include "speculative/speculative_session.h"

namespace pocket::cli {

namespace {

struct Example {
  int64_t line = 0;  // 1-based line in the JSONL file
  std::string task, lang;
  std::vector<int32_t> prompt;  // chat-rendered ids with the generation prompt
};

// The conversation up to its last user turn (a trailing assistant turn is the reference answer).
Status read_examples(const Model& model, const std::string& path, int per_task, std::vector<Example>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("[bench] cannot read task prompts '" + path + "'");
  std::map<std::string, int> taken;
  std::string text;
  for (int64_t line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line);
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return invalid_argument("[bench] not a JSON object: " + where);
    const auto msgs = j.find("messages");
    if (msgs == j.end() || !msgs->is_array()) return invalid_argument("[bench] no \"messages\" array: " + where);
    Example ex;
    ex.line = line;
    ex.task = j.value("task", std::string("(none)"));
    ex.lang = j.value("lang", std::string("-"));
    if (taken[ex.task] >= per_task) continue;
    std::vector<ChatMessage> turns;
    for (const auto& m : *msgs) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
          !m["content"].is_string()) {
        return invalid_argument("[bench] a message without string \"role\" and \"content\": " + where);
      }
      turns.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    while (!turns.empty() && turns.back().role != "user") turns.pop_back();
    if (turns.empty()) return invalid_argument("[bench] no user message: " + where);
    auto ids = render_chat_ids(model, turns, true);
    if (!ids) return Status(ids.status().code(), ids.status().message() + " (" + where + ")");
    ex.prompt = std::move(*ids);
    ++taken[ex.task];
    out->push_back(std::move(ex));
  }
  if (out->empty()) return invalid_argument("[bench] no task examples in '" + path + "'");
  return Status::ok();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

// Sums over a group of examples.
struct Group {
  std::string task, lang;
  int64_t n_examples = 0, n_identical = 0, n_tokens = 0;
  double plain_s = 0, spec_s = 0;  // summed per-example median decode seconds
  SpecStats spec;
  void add(int64_t tokens, double tp, double ts, const SpecStats& st, bool same) {
    ++n_examples;
    n_identical += same ? 1 : 0;
    n_tokens += tokens;
    plain_s += tp;
    spec_s += ts;
    spec.n_passes += st.n_passes;
    spec.n_drafted += st.n_drafted;
    spec.n_accepted += st.n_accepted;
    spec.n_plain += st.n_plain;
  }
  double plain_tps() const { return plain_s > 0 ? n_tokens / plain_s : 0.0; }
  double spec_tps() const { return spec_s > 0 ? n_tokens / spec_s : 0.0; }
  double speedup() const { return spec_s > 0 ? plain_s / spec_s : 0.0; }
  // Tokens per pass that drafted (the accepted drafts plus the target's own token): the acceptance length.
  double tau() const {
    const int64_t n = spec.n_passes - spec.n_plain;
    return n > 0 ? static_cast<double>(spec.n_accepted + n) / n : 0.0;
  }
};

}  // namespace

int bench_tasks(const TaskBenchArgs& a, nlohmann::json* json) {
  if (a.per_task < 1 || a.reps < 1 || a.n_gen < 1) {
    return report("bench", invalid_argument("[bench] --per-task, -r and -n must be >= 1 with --task-prompts"));
  }
  auto method = parse_spec_method(a.method);
  if (!method) return report("bench", method.status());
  if (*method == SpecMethod::kNone) {
    return report("bench", invalid_argument("[bench] --task-prompts compares speculative decoding with plain: "
                                            "add --spec ngram, draft or block"));
  }
  OpenOptions open;
  open.load = a.no_mmap ? FileLoad::kRead : FileLoad::kMap;
  auto model = Model::load(a.model, open);
  if (!model) return report("bench", model.status());
  std::vector<Example> examples;
  if (Status st = read_examples(**model, a.tasks_file, a.per_task, &examples); !st.is_ok()) return report("bench", st);

  size_t longest = 0;
  for (const Example& ex : examples) longest = std::max(longest, ex.prompt.size());
  const int64_t n_ctx_train = (*model)->hparams().n_ctx_train;
  SessionOptions so;
  so.n_threads = a.threads;
  so.n_ctx = std::min<int64_t>(n_ctx_train, static_cast<int64_t>(longest) + a.n_gen + kMaxDraft + 2);
  if (static_cast<int64_t>(longest) >= so.n_ctx) {
    return report("bench", invalid_argument("[bench] a task prompt of " + std::to_string(longest) +
                                            " tokens leaves no room in the model's context of " +
                                            std::to_string(n_ctx_train)));
  }
  SpeculativeOptions spec;
  spec.method = *method;
  spec.draft_max = a.draft_max;
  spec.draft_model_path = a.draft_model;
  spec.draft_open = open;
  spec.fallback.enabled = a.fallback;
  auto sessions = make_bench_sessions(*model, so, spec);
  if (!sessions) return report("bench", sessions.status());
  auto& plain = sessions->plain;
  auto& specs = sessions->spec;
  const std::string& off = specs->spec_disabled_reason();

  GenerateOptions go;
  go.n_predict = a.n_gen;
  go.add_bos = false;  // render_chat_ids put BOS where the package wants one
  go.sampling = SamplingParams::greedy();
  std::vector<int32_t> out_plain, out_spec;
  // One generation; its decode seconds, or a negative value after an error (in *err).
  auto gen = [&](bool speculative, const Example& ex, std::vector<int32_t>* out, Status* err) -> double {
    out->clear();
    GenerateStats gs;
    const TokenCallback keep = [out](int32_t id, std::string_view) {
      if (id >= 0) out->push_back(id);
      return true;
    };
    Status st;
    if (speculative) {
      specs->reset();
      st = specs->generate_tokens(ex.prompt, go, keep, nullptr, &gs);
    } else {
      plain->reset();
      st = plain->generate_tokens(ex.prompt, go, keep, nullptr, &gs);
    }
    if (!st.is_ok()) {
      *err = Status(st.code(), st.message() + " (" + a.tasks_file + ":" + std::to_string(ex.line) + ")");
      return -1.0;
    }
    return gs.decode_seconds;
  };

  Status err;
  if (gen(false, examples[0], &out_plain, &err) < 0 || gen(true, examples[0], &out_spec, &err) < 0) {
    return report("bench", err);  // the warm-up
  }
  std::vector<Group> groups;  // per task, per (task, language), per language, all: "(all)"
  auto group = [&](const std::string& task, const std::string& lang) -> Group& {
    for (Group& g : groups) {
      if (g.task == task && g.lang == lang) return g;
    }
    Group& g = groups.emplace_back();
    g.task = task;
    g.lang = lang;
    return g;
  };
  nlohmann::json differences = nlohmann::json::array();
  std::set<std::string> langs;
  std::map<std::string, std::set<std::string>> task_langs;
  for (const Example& ex : examples) {
    langs.insert(ex.lang);
    task_langs[ex.task].insert(ex.lang);
  }
  for (const Example& ex : examples) {
    std::vector<double> tp, ts;
    std::vector<int32_t> first_plain;
    bool same = true;
    for (int r = 0; r < a.reps; ++r) {
      const bool spec_first = r % 2 == 1;  // alternate the order: neither mode always runs on a warmer cache
      double t1 = gen(spec_first, ex, spec_first ? &out_spec : &out_plain, &err);
      double t2 = t1 < 0 ? -1.0 : gen(!spec_first, ex, spec_first ? &out_plain : &out_spec, &err);
      if (t2 < 0) return report("bench", err);
      tp.push_back(spec_first ? t2 : t1);
      ts.push_back(spec_first ? t1 : t2);
      if (r == 0) first_plain = out_plain;
      same = same && out_spec == out_plain && out_plain == first_plain;
    }
    if (!same) {
      size_t at = 0;
      while (at < out_plain.size() && at < out_spec.size() && out_plain[at] == out_spec[at]) ++at;
      const int32_t want = at < out_plain.size() ? out_plain[at] : -1, got = at < out_spec.size() ? out_spec[at] : -1;
      std::fprintf(stderr,
                   "pocket bench: OUTPUT DIFFERS from plain decoding on %s:%lld (task %s, %s): first at token %zu "
                   "(plain id %d, speculative id %d; %zu vs %zu tokens)\n",
                   a.tasks_file.c_str(), static_cast<long long>(ex.line), ex.task.c_str(), ex.lang.c_str(), at, want,
                   got, out_plain.size(), out_spec.size());
      differences.push_back({{"line", ex.line}, {"task", ex.task}, {"lang", ex.lang}, {"first_token", at},
                             {"plain_id", want}, {"spec_id", got}});
    }
    const SpecStats& st = specs->spec_stats();  // the last speculative run of this example
    const int64_t tokens = static_cast<int64_t>(out_plain.size());
    const double mp = median(tp), ms = median(ts);
    group(ex.task, "(all)").add(tokens, mp, ms, st, same);
    if (task_langs[ex.task].size() > 1) group(ex.task, ex.lang).add(tokens, mp, ms, st, same);
    if (langs.size() > 1) group("(all)", ex.lang).add(tokens, mp, ms, st, same);
    group("(all)", "(all)").add(tokens, mp, ms, st, same);
  }
  // Each task's total then its languages (tasks in first-seen order), the language totals, the total last.
  std::vector<Group> ordered;
  auto take = [&](const std::string& task, const std::string& lang) {
    for (const Group& g : groups) {
      if (g.task == task && g.lang == lang) ordered.push_back(g);
    }
  };
  std::vector<std::string> tasks;
  for (const Example& ex : examples) {
    if (std::find(tasks.begin(), tasks.end(), ex.task) == tasks.end()) tasks.push_back(ex.task);
  }
  for (const std::string& t : tasks) {
    take(t, "(all)");
    if (task_langs[t].size() > 1) {
      for (const std::string& l : task_langs[t]) take(t, l);
    }
  }
  if (langs.size() > 1) {
    for (const std::string& l : langs) take("(all)", l);
  }
  take("(all)", "(all)");
  groups = std::move(ordered);
  const bool all_same = differences.empty();
  const Group& total = groups.back();
  if (json != nullptr) {
    nlohmann::json rows = nlohmann::json::array();
    for (const Group& g : groups) {
      rows.push_back({{"task", g.task}, {"lang", g.lang}, {"examples", g.n_examples}, {"tokens", g.n_tokens},
                      {"plain_tps", g.plain_tps()}, {"spec_tps", g.spec_tps()}, {"speedup", g.speedup()},
                      {"tokens_per_pass", g.spec.tokens_per_pass()}, {"tau", g.tau()},
                      {"acceptance_rate", g.spec.acceptance_rate()}, {"passes", g.spec.n_passes},
                      {"plain_passes", g.spec.n_plain}, {"drafted", g.spec.n_drafted},
                      {"accepted", g.spec.n_accepted}, {"identical", g.n_identical}});
    }
    (*json)["task_bench"] = {{"method", a.method}, {"draft_model", a.draft_model}, {"draft_max", a.draft_max},
                             {"tasks_file", a.tasks_file}, {"per_task", a.per_task}, {"n_gen", a.n_gen},
                             {"reps", a.reps}, {"threads", specs->n_threads()}, {"fallback", a.fallback},
                             {"rows", rows}, {"outputs_identical", all_same}, {"differences", differences},
                             {"spec_disabled_reason", off}};
  } else {
    std::printf("| task | lang | n | tokens | plain t/s | spec t/s | speed-up | tokens/pass | tau | acceptance | "
                "plain passes | identical |\n");
    std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (const Group& g : groups) {
      std::printf("| %s | %s | %lld | %lld | %.2f | %.2f | %.2fx | %.2f | %.2f | %.1f%% | %lld of %lld | %lld/%lld |\n",
                  g.task.c_str(), g.lang.c_str(), static_cast<long long>(g.n_examples),
                  static_cast<long long>(g.n_tokens), g.plain_tps(), g.spec_tps(), g.speedup(),
                  g.spec.tokens_per_pass(), g.tau(), 100.0 * g.spec.acceptance_rate(),
                  static_cast<long long>(g.spec.n_plain), static_cast<long long>(g.spec.n_passes),
                  static_cast<long long>(g.n_identical), static_cast<long long>(g.n_examples));
    }
    std::printf("\n%s, spec=%s k=%d%s, %lld examples (up to %d per task) from %s, greedy, up to %d tokens each, "
                "%d threads, median of %d alternating runs per example; outputs %s\n",
                a.model.c_str(), a.method.c_str(), a.draft_max, a.fallback ? "" : " (no fallback)",
                static_cast<long long>(total.n_examples), a.per_task, a.tasks_file.c_str(), a.n_gen,
                specs->n_threads(), a.reps,
                all_same ? "identical to plain decoding (lossless)" : "DIFFER from plain decoding (see stderr)");
  }
  if (!all_same) {
    std::fprintf(stderr, "pocket bench: %zu of %lld outputs DIFFER from plain greedy decoding: speculation is not "
                 "lossless here\n", differences.size(), static_cast<long long>(total.n_examples));
    return 1;
  }
  return 0;
}

}  // namespace pocket::cli
