// `pocket task extract|classify|route|rewrite|redact`: the task layer from the command line, printing the
// result as JSON (the same JSON as the C API's pocket_task_run and the server's POST /v1/pocket/task).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "core/process_memory.h"
#include "generate/session.h"
#include "spec_flags.h"
#include "speculative/speculative_session.h"
#include "task/task.h"

namespace pocket::cli {

namespace {

struct TaskArgs {
  std::string batch;  // a JSONL file of requests
  std::string task, model, text, text_file, schema_file, schema_text, labels, instruction, request, system;
  bool ground = false, use_model = false, no_chat = false, compact = false;
  int max_tokens = 256, threads = 0, beams = 0;
  int64_t ctx = 0;
  double threshold = 0.5, calibration_t = 1.0, temp = 0.0;
  uint64_t seed = 0;
  std::string spec = "none", draft_model;  // free generation through a speculative session
  int draft_max = 8;
  bool no_spec_fallback = false;
};

// --spec: a speculative session beside the plain one; rewriting and token-by-token extraction generate
// through it (TaskOptions::generate), summing its counters over the calls.
struct TaskSpec {
  std::unique_ptr<SpeculativeSession> session;
  SpecStats total;
  TaskGenerateFn fn() {
    if (!session || !session->spec_disabled_reason().empty()) return {};
    return [this](std::span<const int32_t> prompt, const GenerateOptions& go, const TokenCallback& cb,
                  const std::atomic<bool>* cancel, GenerateStats* st) {
      session->reset();
      Status s = session->generate_tokens(prompt, go, cb, cancel, st);
      const SpecStats& c = session->spec_stats();
      total.n_passes += c.n_passes;
      total.n_drafted += c.n_drafted;
      total.n_accepted += c.n_accepted;
      total.n_plain += c.n_plain;
      return s;
    };
  }
};

Status make_task_spec(const TaskArgs& a, const std::shared_ptr<const Model>& model, const SessionOptions& so,
                      TaskSpec* out) {
  POCKET_RETURN_IF_ERROR(check_spec_flags("task", a.spec, a.draft_model));
  if (a.spec == "none") return Status::ok();
  POCKET_ASSIGN_OR_RETURN(SpecMethod method, parse_spec_method(a.spec));
  SpeculativeOptions spec;
  spec.method = method;
  spec.draft_max = a.draft_max;
  spec.draft_model_path = a.draft_model;
  spec.fallback.enabled = !a.no_spec_fallback;
  POCKET_ASSIGN_OR_RETURN(out->session, SpeculativeSession::create(model, so, spec));
  if (!out->session->spec_disabled_reason().empty()) {
    std::fprintf(stderr, "pocket task: speculation off, decoding plainly: %s\n",
                 out->session->spec_disabled_reason().c_str());
  }
  return Status::ok();
}

void print_spec_line(const TaskArgs& a, const TaskSpec& ts) {
  if (ts.session && ts.session->spec_disabled_reason().empty())
    print_spec_stats(a.spec, a.draft_max, ts.total);
}

Expected<std::string> read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(std::string("[task] cannot read ") + what + " '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Splits "a,b,c" at commas (no escaping: a label with a comma needs --request).
std::vector<std::string> split_labels(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      out.push_back(s.substr(b, i - b));
      b = i + 1;
    }
  }
  return out;
}

// --batch: one request per line in, one result per line out (an error as {"error": message, "line": n}),
// with one model load and one session for all of them.
int run_batch(const TaskArgs& a) {
  if (a.model.empty()) return report("task", invalid_argument("[task] --batch needs -m MODEL"));
  std::ifstream in(a.batch, std::ios::binary);
  if (!in) return report("task", io_error("[task] cannot read '" + a.batch + "'"));
  auto model = Model::load(a.model);
  if (!model) return report("task", model.status());
  SessionOptions so;
  so.n_ctx = a.ctx;
  so.n_threads = a.threads;
  so.n_logit_rows = 16;
  auto session = Session::create(*model, so);
  if (!session) return report("task", session.status());
  TaskSpec ts;
  if (Status st = make_task_spec(a, *model, so, &ts); !st.is_ok()) return report("task", st);
  const TaskGenerateFn gen = ts.fn();
  std::string line;
  int64_t n = 0, failed = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::ordered_json req = nlohmann::ordered_json::parse(line, nullptr, false);
    Expected<nlohmann::ordered_json> r =
        req.is_discarded() ? Expected<nlohmann::ordered_json>(invalid_argument("[task] not valid JSON"))
                           : run_task(**session, req, nullptr, gen);
    nlohmann::ordered_json out =
        r ? std::move(*r) : nlohmann::ordered_json{{"error", r.status().to_string()}, {"line", n}};
    failed += !r;
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  }
  std::fflush(stdout);
  std::fprintf(stderr, "pocket task --batch: %lld requests, %lld errors\n", static_cast<long long>(n),
               static_cast<long long>(failed));
  print_spec_line(a, ts);
  return 0;
}

int run(const TaskArgs& a) {
  if (!a.batch.empty()) return run_batch(a);
  nlohmann::ordered_json req;
  if (!a.request.empty()) {
    req = nlohmann::ordered_json::parse(a.request, nullptr, false);
    if (req.is_discarded()) return report("task", invalid_argument("[task] --request is not valid JSON"));
  } else {
    std::string text = a.text;
    if (!a.text_file.empty()) {
      auto t = read_file(a.text_file, "text file");
      if (!t) return report("task", t.status());
      text = *t;
    }
    if (a.beams != 0 && a.task != "extract")
      return report("task", invalid_argument("[task] --beams is for extract"));
    req = {{"task", a.task}, {"text", text}};
    if (!a.instruction.empty()) req["instruction"] = a.instruction;
    if (!a.system.empty()) req["system"] = a.system;
    if (a.no_chat) req["chat"] = false;
    if (a.temp > 0) req["temperature"] = a.temp, req["seed"] = a.seed;
    req["max_tokens"] = a.max_tokens;
    if (a.task == "extract") {
      std::string schema = a.schema_text;
      if (!a.schema_file.empty()) {
        auto t = read_file(a.schema_file, "schema file");
        if (!t) return report("task", t.status());
        schema = *t;
      }
      if (!schema.empty()) {
        nlohmann::ordered_json sj = nlohmann::ordered_json::parse(schema, nullptr, false);
        if (sj.is_discarded()) return report("task", invalid_argument("[task] the schema is not valid JSON"));
        req["schema"] = sj;
      }
      if (a.ground) req["ground"] = true;
      if (a.beams != 0) req["beams"] = a.beams;
    } else if (a.task == "classify") {
      if (a.labels.empty()) return report("task", invalid_argument("[task] classify needs --labels a,b,c"));
      req["labels"] = split_labels(a.labels);
      req["calibration_t"] = a.calibration_t;
    } else if (a.task == "route") {
      req["threshold"] = a.threshold;
      req["calibration_t"] = a.calibration_t;
    } else if (a.task == "redact") {
      if (a.use_model) req["model"] = true;
    }
  }
  const std::string task = req.value("task", std::string());
  nlohmann::ordered_json out;
  std::string budget;  // the budget line, printed after the result
  TaskSpec ts;
  if (task == "redact" && !req.value("model", false)) {
    // The detectors need no model.
    const std::string text = req.value("text", std::string());
    auto r = task_redact(nullptr, text, TaskOptions{});
    if (!r) return report("task", r.status());
    out = redact_result_json(text, *r);
  } else {
    if (a.model.empty())
      return report("task", invalid_argument("[task] -m MODEL is required for '" + task + "'"));
    const MemoryReading before = read_process_memory();
    auto model = Model::load(a.model);
    if (!model) return report("task", model.status());
    SessionOptions so;
    so.n_ctx = a.ctx;
    so.n_threads = a.threads;
    so.n_logit_rows = 16;  // a label's tokens score in one pass (classify, route)
    auto session = Session::create(*model, so);
    if (!session) return report("task", session.status());
    if (Status st = make_task_spec(a, *model, so, &ts); !st.is_ok()) return report("task", st);
    auto r = run_task(**session, req, nullptr, ts.fn());
    if (!r) return report("task", r.status());
    out = std::move(*r);
    // The budget line (stderr): what the call cost on this machine.
    const MemoryReading after = read_process_memory();
    const uint64_t peak =
        after.peak_rss_bytes > before.rss_bytes ? after.peak_rss_bytes - before.rss_bytes : 0;
    std::string line = "pocket task " + task + ": package " + format_bytes((*model)->package().file_size()) +
                       " | peak memory increase " + format_bytes(peak);
    if (out.contains("usage")) {
      const nlohmann::ordered_json& u = out["usage"];
      char buf[256];
      const double n = u.value("completion_tokens", 0.0);
      std::snprintf(buf, sizeof buf,
                    " | prompt %lld tokens, generated %lld | prefill %.1f tok/s, decode %.1f tok/s | mask "
                    "%.3f ms/token",
                    static_cast<long long>(u.value("prompt_tokens", 0)), static_cast<long long>(n),
                    u.value("prefill_tokens_per_second", 0.0), u.value("decode_tokens_per_second", 0.0),
                    n > 0 ? u.value("constraint_ms", 0.0) / n : 0.0);
      line += buf;
    }
    budget = line;
  }
  const std::string s = a.compact ? out.dump() : out.dump(2);
  std::printf("%s\n", s.c_str());
  std::fflush(stdout);
  if (!budget.empty()) std::fprintf(stderr, "%s\n", budget.c_str());  // after the result, as pocket run does
  print_spec_line(a, ts);
  return 0;
}

}  // namespace

void register_task(CLI::App& app) {
  auto a = std::make_shared<TaskArgs>();
  CLI::App* c = app.add_subcommand("task",
                                   "App tasks with outputs valid by construction: extract (JSON schema, "
                                   "grounded), classify, route, rewrite, redact (docs/tasks.md)");
  c->add_option("task", a->task, "extract, classify, route, rewrite or redact")
      ->check(CLI::IsMember({"extract", "classify", "route", "rewrite", "redact"}));
  c->add_option("-m,--model", a->model, "Model package (.pocket); redact needs none unless --model-spans");
  c->add_option("-p,--prompt,--text", a->text, "The text to work on");
  c->add_option("-f,--file", a->text_file, "Read the text from a file");
  c->add_option("--schema", a->schema_file, "extract: a JSON schema file (docs/constrained-decoding.md)");
  c->add_option("-j,--json-schema", a->schema_text, "extract: the JSON schema as text");
  c->add_flag("--ground", a->ground,
              "extract: every plain string must be a span of the text, every number a number in it");
  c->add_option("--labels", a->labels, "classify: the labels, comma-separated");
  c->add_option("--threshold", a->threshold, "route: 'local' when p(local) >= this (default 0.5)");
  c->add_option(
      "--calibration-t", a->calibration_t,
      "classify/route: temperature dividing the label log-probabilities (fitted on held-out data; 1 = none)");
  c->add_flag("--model-spans", a->use_model, "redact: also the model's names and addresses (needs -m)");
  c->add_option("--instruction", a->instruction,
                "Instruction line before the text (default: the task's, in the text's language)");
  c->add_option("--system", a->system, "A system turn");
  c->add_flag("--no-chat", a->no_chat, "Do not wrap the request in the package's chat template");
  c->add_option("-n,--max-tokens", a->max_tokens, "extract/rewrite: tokens to generate at most");
  c->add_option("--beams", a->beams,
                "extract: alternatives kept per value by beam search (1..16; 1 = token-by-token greedy; "
                "default 2, 1 with --temp)");
  c->add_option("--temp", a->temp, "Sampling temperature for extract/rewrite (0 = greedy, the default)");
  c->add_option("-s,--seed", a->seed, "Random seed with --temp");
  c->add_option("-t,--threads", a->threads, "Threads (default: physical cores)");
  c->add_option("-c,--ctx-size", a->ctx, "Context length (default: the package's)");
  c->add_option("--request", a->request, "The whole request as JSON (as POST /v1/pocket/task takes it)");
  c->add_option("--batch", a->batch,
                "A JSONL file of requests: one result per line on stdout (errors as {\"error\":…})");
  c->add_flag("--compact", a->compact, "Print the result on one line");
  c->add_option(
       "--spec", a->spec,
       "Speculative decoding of free generation (rewrite, extract with --beams 1): none, ngram, draft or "
       "block (-md); lossless")
      ->check(CLI::IsMember({"none", "ngram", "draft", "block"}));
  c->add_option("--draft-max", a->draft_max, "Longest draft k, 1..16");
  c->add_option("--model-draft", a->draft_model, kModelDraftHelp);
  c->add_flag("--no-spec-fallback", a->no_spec_fallback,
              "Always speculate (default: decode plainly while speculation is measured slower)");
  c->callback([a] {
    if (!a->batch.empty()) {
      if (int rc = run(*a); rc != 0) throw CLI::RuntimeError(rc);
      return;
    }
    if (a->request.empty() && a->task.empty()) {
      std::fprintf(
          stderr,
          "pocket task: name a task (extract, classify, route, rewrite, redact) or give --request JSON\n");
      throw CLI::RuntimeError(2);
    }
    if (a->request.empty() && a->text.empty() && a->text_file.empty()) {
      std::fprintf(stderr, "pocket task: give the text with -p TEXT or -f FILE\n");
      throw CLI::RuntimeError(2);
    }
    if (int rc = run(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
