// `pocket run`: load a package, generate from a prompt, stream the text, report counts and speed.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "spec_flags.h"
#include "tokenizer/chat_template.h"
#include "core/process_memory.h"
#include "generate/chat_prompt.h"
#include "generate/session.h"
#include "speculative/speculative_session.h"
#include "task/task.h"

namespace pocket::cli {

namespace {

struct RunArgs {
  std::string model, prompt, prompt_file;
  int n_predict = 128;
  int threads = 0;
  int64_t ctx = 0;
  float temp = NAN, top_p = NAN, min_p = NAN, repeat_penalty = NAN;
  int top_k = -1000000, repeat_last_n = -1000000;
  uint64_t seed = 0;
  double mem_budget_mb = 0;
  bool no_mmap = false;
  bool no_bos = false, special = false, ignore_eos = false, chat = false;
  std::string system;
  std::string spec = "none", draft_model;  // speculative decoding (src/speculative)
  int draft_max = 8;
  bool no_spec_fallback = false;
  std::string grammar, grammar_file, json_schema, json_schema_file;  // constrained decoding (src/constrain)
};

int run(const RunArgs& a) {
  std::string prompt = a.prompt;
  if (!a.prompt_file.empty()) {
    std::ifstream in(a.prompt_file, std::ios::binary);
    if (!in) return report("run", io_error("[run] cannot read prompt file '" + a.prompt_file + "'"));
    std::stringstream ss;
    ss << in.rdbuf();
    prompt = ss.str();
  }
  if (Status st = check_spec_flags("run", a.spec, a.draft_model); !st.is_ok()) return report("run", st);
  const MemoryReading before = read_process_memory();
  OpenOptions open;
  open.load = a.no_mmap ? FileLoad::kRead : FileLoad::kMap;
  auto model = Model::load(a.model, open);
  if (!model) return report("run", model.status());
  SessionOptions so;
  so.n_ctx = a.ctx;
  so.n_threads = a.threads;
  so.mem_budget_bytes = static_cast<uint64_t>(a.mem_budget_mb * 1024.0 * 1024.0);
  std::unique_ptr<Session> plain;
  std::unique_ptr<SpeculativeSession> specs;
  if (a.spec == "none") {
    auto session = Session::create(*model, so);
    if (!session) return report("run", session.status());
    plain = std::move(*session);
  } else {
    auto method = parse_spec_method(a.spec);
    if (!method) return report("run", method.status());
    SpeculativeOptions spec;
    spec.method = *method;
    spec.draft_max = a.draft_max;
    spec.draft_model_path = a.draft_model;
    spec.draft_open = open;
    spec.fallback.enabled = !a.no_spec_fallback;
    auto session = SpeculativeSession::create(*model, so, spec);
    if (!session) return report("run", session.status());
    specs = std::move(*session);
    if (!specs->spec_disabled_reason().empty()) {
      std::fprintf(stderr, "pocket run: speculation off, decoding plainly: %s\n", specs->spec_disabled_reason().c_str());
    }
  }

  const std::string shown = prompt;  // echoed as typed, without the template's markup
  std::vector<int32_t> chat_ids;
  if (a.chat) {
    // One user turn (after an optional system turn) in the package's chat template; the turns' text stays
    // plain text, special-token spellings included (--special applies to prompts without --chat).
    std::vector<ChatMessage> msgs;
    if (!a.system.empty()) msgs.push_back({"system", a.system});
    msgs.push_back({"user", prompt});
    auto ids = render_chat_ids(**model, msgs, true);
    if (!ids) return report("run", ids.status());
    chat_ids = std::move(*ids);
    const int32_t bos = (*model)->tokenizer().bos_id();
    if (a.no_bos && !chat_ids.empty() && bos >= 0 && chat_ids.front() == bos) chat_ids.erase(chat_ids.begin());
  }
  const auto& def = (*model)->config().sampling;
  GenerateOptions go;
  go.n_predict = a.n_predict;
  go.add_bos = !a.no_bos;
  go.parse_special = a.special || a.chat;
  go.stop_at_eos = !a.ignore_eos;
  SamplingParams& sp = go.sampling;
  sp.temperature = std::isnan(a.temp) ? def.temperature : a.temp;
  sp.top_k = a.top_k == -1000000 ? def.top_k : a.top_k;
  sp.top_p = std::isnan(a.top_p) ? def.top_p : a.top_p;
  sp.min_p = std::isnan(a.min_p) ? def.min_p : a.min_p;
  sp.repeat_penalty = std::isnan(a.repeat_penalty) ? def.repeat_penalty : a.repeat_penalty;
  sp.repeat_last_n = a.repeat_last_n == -1000000 ? def.repeat_last_n : a.repeat_last_n;
  sp.seed = a.seed;

  // Constrained decoding: a GBNF grammar or a JSON schema; "copy" terminals / "x-pocket-copy" strings are spans
  // of the prompt as typed.
  std::unique_ptr<TokenConstraint> constraint;
  std::string grammar = a.grammar, schema = a.json_schema;
  for (auto [file, out] : {std::pair{&a.grammar_file, &grammar}, std::pair{&a.json_schema_file, &schema}}) {
    if (file->empty()) continue;
    std::ifstream in(*file, std::ios::binary);
    if (!in) return report("run", io_error("[run] cannot read '" + *file + "'"));
    std::stringstream ss;
    ss << in.rdbuf();
    *out = ss.str();
  }
  const bool want_schema = !a.json_schema.empty() || !a.json_schema_file.empty();
  if (want_schema || !grammar.empty()) {
    auto c = want_schema ? make_json_constraint(**model, schema, shown) : make_grammar_constraint(**model, grammar, shown);
    if (!c) return report("run", c.status());
    constraint = std::move(*c);
    go.constraint = constraint.get();
  }
  std::fwrite(shown.data(), 1, shown.size(), stdout);
  if (a.chat) std::fputc('\n', stdout);
  std::fflush(stdout);
  GenerateStats stats;
  const TokenCallback print = [](int32_t, std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  };
  Status st = a.chat ? (plain ? plain->generate_tokens(chat_ids, go, print, nullptr, &stats)
                              : specs->generate_tokens(chat_ids, go, print, nullptr, &stats))
                     : (plain ? plain->generate(prompt, go, print, nullptr, &stats)
                              : specs->generate(prompt, go, print, nullptr, &stats));
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!st.is_ok()) return report("run", st);
  const MemoryReading after = read_process_memory();
  const uint64_t peak_increase = after.peak_rss_bytes > before.rss_bytes ? after.peak_rss_bytes - before.rss_bytes : 0;
  const uint64_t drafter_bytes = specs ? specs->drafter_plan().weights : 0;  // a block drafter's package
  const std::string package = format_bytes((*model)->package().file_size()) +
                              (drafter_bytes > 0 ? " + drafter " + format_bytes(drafter_bytes) : std::string());
  std::fprintf(stderr,
               "\npocket run: prompt %lld tokens, generated %lld tokens | prefill %.2f tok/s, decode %.2f tok/s | "
               "%d threads | package %s | peak memory increase %s\n",
               static_cast<long long>(stats.n_prompt), static_cast<long long>(stats.n_generated), stats.prefill_tps(),
               stats.decode_tps(), plain ? plain->n_threads() : specs->n_threads(), package.c_str(),
               format_bytes(peak_increase).c_str());
  if (specs && specs->spec_disabled_reason().empty()) print_spec_stats(a.spec, a.draft_max, specs->spec_stats());
  return 0;
}

}  // namespace

void register_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* c = app.add_subcommand("run", "Generate text from a prompt");
  c->add_option("-m,--model", a->model, "Model package (.pocket)")->required();
  c->add_option("-p,--prompt", a->prompt, "Prompt text");
  c->add_option("-f,--file", a->prompt_file, "Read the prompt from a file");
  c->add_option("-n,--n-predict", a->n_predict, "Tokens to generate (-1: until a stop token or the context is full)");
  c->add_option("-t,--threads", a->threads, "Threads (default: physical cores)");
  c->add_option("-c,--ctx-size", a->ctx, "Context length (default: the package's)");
  c->add_option("--temp", a->temp, "Temperature (0 = greedy; default: the package's)");
  c->add_option("--top-k", a->top_k, "Top-k (<= 0: off)");
  c->add_option("--top-p", a->top_p, "Top-p (1: off)");
  c->add_option("--min-p", a->min_p, "Min-p (0: off)");
  c->add_option("--repeat-penalty", a->repeat_penalty, "Repetition penalty (1: off)");
  c->add_option("--repeat-last-n", a->repeat_last_n, "Tokens the repetition penalty looks back over");
  c->add_option("-s,--seed", a->seed, "Random seed (same seed, same tokens)");
  c->add_option("--mem-budget", a->mem_budget_mb, "Refuse a session whose memory plan exceeds this many MiB");
  c->add_flag("--no-mmap", a->no_mmap, "Read the package into huge-page memory instead of mapping it (the mapping is shared between processes and gets 2 MiB pages too: docs/performance.md)");
  c->add_flag("--no-bos", a->no_bos, "Do not prepend BOS");
  c->add_flag("--special", a->special, "Parse special-token text in the prompt");
  c->add_flag("--chat", a->chat, "Wrap the prompt as a user turn in the package's chat template (the template's markup as special tokens, the prompt's text as plain text)");
  c->add_option("--system", a->system, "With --chat: a system turn before the user turn");
  c->add_flag("--ignore-eos", a->ignore_eos, "Keep generating past stop tokens");
  c->add_option("--grammar", a->grammar, "Constrain the output to a GBNF grammar (text; docs/constrained-decoding.md)");
  c->add_option("--grammar-file", a->grammar_file, "Constrain the output to the GBNF grammar in this file");
  c->add_option("-j,--json-schema", a->json_schema, "Constrain the output to JSON valid against this schema (given as text)");
  c->add_option("--json-schema-file", a->json_schema_file, "Constrain the output to JSON valid against the schema in this file");
  c->add_option("--spec", a->spec, kSpecHelp)->check(CLI::IsMember({"none", "ngram", "draft", "block"}));
  c->add_option("--draft-max", a->draft_max, "Longest draft k, 1..16 (adapted down when acceptance drops)");
  c->add_option("--model-draft", a->draft_model, kModelDraftHelp);
  c->add_flag("--no-spec-fallback", a->no_spec_fallback,
              "Always speculate (default: decode plainly while speculation is measured slower)");
  c->callback([a] {
    if (a->prompt.empty() && a->prompt_file.empty()) {
      std::fprintf(stderr, "pocket run: give a prompt with -p TEXT or -f FILE\n");
      throw CLI::RuntimeError(2);
    }
    if (int rc = run(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
