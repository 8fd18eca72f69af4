// `pocket-train import`: a .pocket package (any weight type) -> a training checkpoint, so a shipped model
// can be fine-tuned further (sft --init RUN_DIR) or evaluated and re-exported.
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

}  // namespace pocket::train::cli
