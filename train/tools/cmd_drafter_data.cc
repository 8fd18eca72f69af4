// `pocket-train drafter-data`: the target's own greedy outputs over task prompts, computed by the runtime
// (pocket Session, temperature 0), stored as prompt ids + generated ids for the block drafter's training
// (data/drafter_data.h; docs/training.md, "Block drafter").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "data/chat_data.h"
#include "data/drafter_data.h"
#include "data/tasks.h"
#include "generate/session.h"
#include "run/run_log.h"

namespace pocket::train::cli {

int cmd_drafter_data(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("model") || !a.has("tasks") || !a.has("out")) {
    std::printf("usage: pocket-train drafter-data -m TARGET.pocket --tasks FILE.jsonl -o OUT.bin [--limit N]\n"
                "         [--max-tokens 128] [--threads 1]\n"
                "  the target's greedy output (runtime, temperature 0, stop token included) for each task prompt,\n"
                "  rendered and encoded as score-tasks does; OUT holds prompt + generated ids per sequence\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"model", "tasks", "out", "limit", "max-tokens", "threads", "help"}); !u.empty()) {
    return report("drafter-data", invalid_argument("unknown flag(s) " + u));
  }
  auto limit = a.i64("limit", 0);
  auto max_tokens = a.i64("max-tokens", 128);
  auto threads = a.i64("threads", 1);
  if (!limit || !max_tokens || !threads || *limit < 0 || *max_tokens < 1 || *threads < 1) {
    return report("drafter-data", invalid_argument("bad --limit/--max-tokens/--threads"));
  }
  std::ifstream in(a.str("tasks"), std::ios::binary);
  if (!in) return report("drafter-data", io_error("[drafter-data] cannot read " + a.str("tasks")));
  std::stringstream ss;
  ss << in.rdbuf();
  auto data = parse_task_examples_jsonl(ss.str(), a.str("tasks"));
  if (!data) return report("drafter-data", data.status());
  if (*limit > 0 && static_cast<size_t>(*limit) < data->size()) data->resize(static_cast<size_t>(*limit));

  auto model = Model::load(a.str("model"));
  if (!model) return report("drafter-data", model.status());
  std::string tmpl = (*model)->config().chat_template;
  if (tmpl.empty() || tmpl == "none") tmpl = "chatml";
  SessionOptions so;
  so.n_threads = static_cast<int32_t>(*threads);
  auto session = Session::create(*model, so);
  if (!session) return report("drafter-data", session.status());
  const Tokenizer& tok = (*model)->tokenizer();
  std::vector<int32_t> stop_ids;
  if (tok.eos_id() >= 0) stop_ids.push_back(tok.eos_id());
  for (int32_t id : (*model)->config().stop_tokens) stop_ids.push_back(id);

  // As score-tasks: BOS unless the template renders it, special tokens parsed. The session's own stop check
  // is off so that the stop token reaches the callback and is stored; the callback ends generation there.
  GenerateOptions go;
  go.n_predict = static_cast<int32_t>(*max_tokens);
  go.sampling = SamplingParams::greedy();
  go.parse_special = true;
  go.stop_at_eos = false;
  const bool add_bos = (*model)->config().add_bos && tmpl != "llama2" && tmpl != "llama3";

  std::vector<DrafterSequence> out;
  out.reserve(data->size());
  int64_t n_skipped = 0, n_gen_total = 0, n_stopped = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < data->size(); ++i) {
    const TaskExample& e = (*data)[i];
    const Conversation c = {{"user", e.prompt}, {"assistant", e.answer}};
    auto prompt = render_prompt(tmpl, c);
    if (!prompt) return report("drafter-data", prompt.status());
    DrafterSequence s;
    s.task = e.task;
    s.lang = e.lang;
    Status st = tok.encode(*prompt, EncodeOptions{.add_bos = add_bos && tok.bos_id() >= 0, .parse_special = true}, &s.ids);
    if (!st.is_ok()) return report("drafter-data", st);
    s.n_prompt = static_cast<int32_t>(s.ids.size());
    (*session)->reset();
    std::vector<int32_t> gen;
    bool stopped = false;
    st = (*session)->generate_tokens(std::vector<int32_t>(s.ids), go, [&](int32_t id, std::string_view) {
      if (id < 0) return true;  // text-only flush of a partial character
      gen.push_back(id);
      if (std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) {
        stopped = true;
        return false;
      }
      return true;
    });
    if (st.code() == ErrorCode::kContextExceeded || gen.empty()) {
      ++n_skipped;
      continue;
    }
    if (!st.is_ok()) return report("drafter-data", st);
    n_stopped += stopped;
    n_gen_total += static_cast<int64_t>(gen.size());
    s.ids.insert(s.ids.end(), gen.begin(), gen.end());
    out.push_back(std::move(s));
    if ((i + 1) % 200 == 0 || i + 1 == data->size()) {
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double rate = static_cast<double>(i + 1) / std::max(el, 1e-9);
      std::fprintf(stderr, "drafter-data: %zu / %zu sequences, %.1f seq/s, %.0f generated tok/s, ETA %s\n", i + 1,
                   data->size(), rate, static_cast<double>(n_gen_total) / std::max(el, 1e-9),
                   format_duration(static_cast<double>(data->size() - i - 1) / std::max(rate, 1e-9)).c_str());
    }
  }
  Status st = write_drafter_data(a.str("out"), out);
  if (!st.is_ok()) return report("drafter-data", st);
  std::fprintf(stderr,
               "drafter-data: wrote %zu sequences (%lld generated tokens, %lld ended by a stop token, %lld skipped) "
               "to %s\n",
               out.size(), (long long)n_gen_total, (long long)n_stopped, (long long)n_skipped, a.str("out").c_str());
  return 0;
}

}  // namespace pocket::train::cli
