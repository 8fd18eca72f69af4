// `pocket-train export` (checkpoint -> .pocket) and `pocket-train eval` (held-out loss, answer accuracy).
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "nn/trainer.h"
#include "run/exporter.h"

namespace pocket::train::cli {

int cmd_export(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("ckpt") || !a.has("out")) {
    std::printf("usage: pocket-train export --ckpt RUN_OR_CHECKPOINT_DIR -o model.pocket [--type f32|f16|bf16|q8_g32|\n"
                "         q4_g32|q4_g64|q4_g32a] [--template chatml|llama2|llama3|none] [--ctx N]\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"ckpt", "out", "type", "template", "ctx", "help"}); !u.empty()) {
    return report("export", invalid_argument("unknown flag(s) " + u));
  }
  ExportOptions eo;
  const std::string type = a.str("type", "f32");
  auto dt = dtype_from_name(type);
  if (!dt) return report("export", invalid_argument("unknown --type '" + type + "'"));
  eo.matrix_type = *dt;
  auto ctx = a.i64("ctx", 0);
  if (!ctx) return report("export", ctx.status());
  eo.context_length = *ctx;
  auto c = load_checkpoint(a.str("ckpt"));
  if (!c) return report("export", c.status());
  eo.chat_template = a.str("template", c->meta.config.chat_template);
  Status st = export_package(c->meta.hparams, c->weights, c->tokenizer, eo, a.str("out"));
  if (!st.is_ok()) return report("export", st);
  std::fprintf(stderr, "export: %s (step %lld, %llu parameters, %s matrices) -> %s\n", c->dir.c_str(),
               (long long)c->meta.step, (unsigned long long)c->meta.hparams.n_params(), type.c_str(),
               a.str("out").c_str());
  return 0;
}

int cmd_eval(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("ckpt")) {
    std::printf("usage: pocket-train eval --ckpt RUN_OR_CHECKPOINT_DIR [--data SHARD]... [--all] [--rows N]\n"
                "         [--answers chats.jsonl --max-answers N]\n"
                "  --all evaluates every document of --data instead of the held-out split\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"ckpt", "data", "all", "rows", "answers", "max-answers", "help"}); !u.empty()) {
    return report("eval", invalid_argument("unknown flag(s) " + u));
  }
  EvalOptions o;
  o.data = a.all("data");
  o.heldout = !a.has("all");
  auto rows = a.i64("rows", 64);
  auto max_answers = a.i64("max-answers", 32);
  if (!rows || !max_answers) return report("eval", invalid_argument("bad --rows/--max-answers"));
  o.rows = *rows;
  o.max_answers = *max_answers;
  o.answers = a.str("answers");
  auto r = evaluate_checkpoint(a.str("ckpt"), o);
  if (!r) return report("eval", r.status());
  std::printf("{\"loss\": %.6f, \"tokens\": %lld", r->loss, (long long)r->tokens);
  if (r->answer_accuracy >= 0) std::printf(", \"answer_accuracy\": %.4f, \"answers\": %lld", r->answer_accuracy, (long long)r->n_answers);
  std::printf("}\n");
  for (const auto& s : r->sample_answers) std::fprintf(stderr, "  %s\n", s.c_str());
  return 0;
}

}  // namespace pocket::train::cli
