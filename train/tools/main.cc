// pocket-train: pretraining, SFT, evaluation and export of pocket models with libtorch.
#include <cstdio>
#include <cstring>

#include "commands.h"

namespace {

void usage() {
  std::printf(
      "usage: pocket-train <command> [flags]   (each command takes --help)\n"
      "  make-data  write a character tokenizer and generated stories + chats (smoke runs, tests)\n"
      "  train-tokenizer  text files -> a byte-level BPE tokenizer (bilingual, byte fallback)\n"
      "  vocab-study      tokens/char, embedding share and decode cost across vocabulary sizes\n"
      "  make-tasks       generated app-task data (extract, intent, rewrite, tool, route; en + zh) splits\n"
      "  score-tasks      score a model's greedy answers (or given predictions) per task and language\n"
      "  calibrate        the task layer's route/intent temperature and thresholds on held-out data\n"
      "  build-corpus     extracted Debian/npm text (scripts/build-corpus.sh) -> bilingual corpus + manifest\n"
      "  tokenize   text (blank-line separated documents, or JSONL {\"text\"}) or chats (--chat, JSONL\n"
      "             {\"messages\"}) -> a token shard\n"
      "  pretrain   train a model from scratch (or resume the run in --out)\n"
      "  sft        fine-tune a pretrained run on chats, loss on assistant tokens only\n"
      "  mopd       multi-teacher on-policy distillation: reverse KL to each task's teacher on student samples\n"
      "  loop       SFT loop engine: failures -> targeted examples -> fine-tune, kept only if no cell regresses\n"
      "  eval       held-out loss of a checkpoint, and greedy answer accuracy on chats\n"
      "  export     a checkpoint -> a .pocket package for `pocket run`\n"
      "  import     a .pocket package -> a training checkpoint (sft --init, eval, export, loop --init)\n"
      "  grow       a checkpoint -> a deeper and/or wider one computing the same function\n"
      "  drafter-data  the target's greedy outputs over task prompts (block drafter training data)\n"
      "  drafter    train a block drafter (DFlash-style) for a target .pocket and export its package\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pocket::train;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage();
    return argc < 2 ? 1 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "pretrain") return cli::cmd_train(Stage::kPretrain, argc, argv);
  if (cmd == "sft") return cli::cmd_train(Stage::kSft, argc, argv);
  if (cmd == "export") return cli::cmd_export(argc, argv);
  if (cmd == "eval") return cli::cmd_eval(argc, argv);
  if (cmd == "tokenize") return cli::cmd_tokenize(argc, argv);
  if (cmd == "make-data") return cli::cmd_make_data(argc, argv);
  if (cmd == "train-tokenizer") return cli::cmd_train_tokenizer(argc, argv);
  if (cmd == "vocab-study") return cli::cmd_vocab_study(argc, argv);
  if (cmd == "make-tasks") return cli::cmd_make_tasks(argc, argv);
  if (cmd == "score-tasks") return cli::cmd_score_tasks(argc, argv);
  if (cmd == "calibrate") return cli::cmd_calibrate(argc, argv);
  if (cmd == "build-corpus") return cli::cmd_build_corpus(argc, argv);
  if (cmd == "mopd") return cli::cmd_mopd(argc, argv);
  if (cmd == "loop") return cli::cmd_loop(argc, argv);
  if (cmd == "import") return cli::cmd_import(argc, argv);
  if (cmd == "grow") return cli::cmd_grow(argc, argv);
  if (cmd == "drafter-data") return cli::cmd_drafter_data(argc, argv);
  if (cmd == "drafter") return cli::cmd_drafter(argc, argv);
  std::fprintf(stderr, "pocket-train: unknown command '%s'\n", cmd.c_str());
  usage();
  return 1;
}
