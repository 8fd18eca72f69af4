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
  if (a.has("help") || !a.has("from") || !a.has("out") || !a.has("layers")) {
    std::printf("usage: pocket-train grow --from RUN_OR_CHECKPOINT --out RUN_DIR --layers N [--threads N]\n"
                "  writes RUN_DIR/ckpt-0000000: the checkpoint's model with N layers (more than it has), layer j\n"
                "  copied from source layer floor(j * L / N); every copy after the first has its attn_output and\n"
                "  ffn_down zeroed, so the grown model computes exactly what the source computes and training\n"
                "  starts from it (sft --init RUN_DIR); RUN_DIR must not hold a checkpoint yet\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"from", "out", "layers", "threads", "help"}); !u.empty()) {
    return report("grow", invalid_argument("unknown flag(s) " + u));
  }
  auto threads = a.i64("threads", 0);
  if (!threads || *threads < 0 || *threads > 1024) return report("grow", invalid_argument("bad --threads"));
  auto layers = a.i64("layers", 0);
  if (!layers) return report("grow", invalid_argument("bad --layers"));
  auto s = grow_checkpoint(a.str("from"), a.str("out"), *layers, static_cast<int32_t>(*threads));
  if (!s) return report("grow", s.status());
  std::fprintf(stderr, "grow: %s (%s) -> %s: %llu parameters, %lld layers\n", a.str("from").c_str(),
               s->source_type.c_str(), s->checkpoint.c_str(), (unsigned long long)s->n_params,
               (long long)s->meta.hparams.n_layers);
  return 0;
}

}  // namespace pocket::train::cli
