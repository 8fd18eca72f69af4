// `pocket-train import`: a .pocket package (any weight type) -> a training checkpoint, so a shipped model
// can be fine-tuned further (sft --init RUN_DIR) or evaluated and re-exported; `pocket-train grow`: a
// checkpoint -> a deeper checkpoint computing the same function (run/grow.h).
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "nn/checkpoint_import.h"

namespace pocket::train::cli {

int cmd_import(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("model") || !a.has("out")) {
    std::printf("usage: pocket-train import (-m | --model) MODEL.pocket --out RUN_DIR [--threads N]\n"
                "  decodes every weight to f32 (quantised packages: exactly the runtime's dequantisation) and\n"
                "  writes RUN_DIR/ckpt-0000000 (model.pt, optim.pt, rng.pt, meta.json, tokenizer.bin), which\n"
                "  sft --init, eval, export and loop --init accept; RUN_DIR must not hold a checkpoint yet\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"model", "out", "threads", "help"}); !u.empty()) {
    return report("import", invalid_argument("unknown flag(s) " + u));
  }
  auto threads = a.i64("threads", 0);
  if (!threads || *threads < 0 || *threads > 1024) return report("import", invalid_argument("bad --threads"));
  auto s = import_checkpoint(a.str("model"), a.str("out"), static_cast<int32_t>(*threads));
  if (!s) return report("import", s.status());
  std::fprintf(stderr, "import: %s (%s, %llu parameters, template %s) -> %s\n", a.str("model").c_str(),
               s->source_type.c_str(), (unsigned long long)s->n_params, s->meta.config.chat_template.c_str(),
               s->checkpoint.c_str());
  return 0;
}

int cmd_grow(int argc, char** argv) {
  Args a(argc, argv, 2);
  const bool asks = a.has("layers") || a.has("width") || a.has("heads") || a.has("kv-heads") || a.has("ff");
  if (a.has("help") || !a.has("from") || !a.has("out") || !asks) {
    std::printf("usage: pocket-train grow --from RUN_OR_CHECKPOINT --out RUN_DIR [--layers N]\n"
                "                         [--width D] [--heads H --kv-heads K] [--ff F] [--seed S] [--threads N]\n"
                "  writes RUN_DIR/ckpt-0000000: the checkpoint's model grown so that it computes exactly what the\n"
                "  source computes, and training starts from it (sft --init RUN_DIR); RUN_DIR must not hold a\n"
                "  checkpoint yet.\n"
                "  --layers N: N layers (more than it has), layer j copied from source layer floor(j * L / N);\n"
                "    every copy after the first has its attn_output and ffn_down zeroed.\n"
                "  --width/--heads/--kv-heads/--ff: a wider residual stream, more heads (the source's query:KV\n"
                "    ratio, same head size), a wider FFN; new entries that write into the residual stream are\n"
                "    zero, new entries that read from it Normal(0, 0.02) from --seed (default 1), norm gains and\n"
                "    norm_eps rescaled for the wider mean square. Width first, then depth.\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"from", "out", "layers", "width", "heads", "kv-heads", "ff", "seed", "threads", "help"});
      !u.empty()) {
    return report("grow", invalid_argument("unknown flag(s) " + u));
  }
  auto threads = a.i64("threads", 0);
  if (!threads || *threads < 0 || *threads > 1024) return report("grow", invalid_argument("bad --threads"));
  GrowRequest req;
  struct Flag { const char* name; int64_t* dst; };
  for (Flag f : {Flag{"layers", &req.new_layers}, Flag{"width", &req.width.n_embd}, Flag{"heads", &req.width.n_heads},
                 Flag{"kv-heads", &req.width.n_kv_heads}, Flag{"ff", &req.width.n_ff}}) {
    auto v = a.i64(f.name, 0);
    if (!v || *v < 0 || (a.has(f.name) && *v == 0)) return report("grow", invalid_argument(std::string("bad --") + f.name));
    *f.dst = *v;
  }
  auto seed = a.i64("seed", 1);
  if (!seed || *seed < 0) return report("grow", invalid_argument("bad --seed"));
  req.width.seed = static_cast<uint64_t>(*seed);
  auto s = grow_checkpoint(a.str("from"), a.str("out"), req, static_cast<int32_t>(*threads));
  if (!s) return report("grow", s.status());
  std::fprintf(stderr, "grow: %s (%s) -> %s: %llu parameters, %lld layers, width %lld\n", a.str("from").c_str(),
               s->source_type.c_str(), s->checkpoint.c_str(), (unsigned long long)s->n_params,
               (long long)s->meta.hparams.n_layers, (long long)s->meta.hparams.n_embd);
  return 0;
}

}  // namespace pocket::train::cli
