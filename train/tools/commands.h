// pocket-train's subcommands; each is a thin main over the train/ libraries.
#pragma once

#include "run/train_config.h"

namespace pocket::train::cli {

int cmd_train(Stage stage, int argc, char** argv);  // pretrain, sft
int cmd_export(int argc, char** argv);
int cmd_eval(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_make_data(int argc, char** argv);
int cmd_train_tokenizer(int argc, char** argv);  // byte-level BPE training
int cmd_vocab_study(int argc, char** argv);
int cmd_make_tasks(int argc, char** argv);   // app-task data (docs/tasks.md)
int cmd_score_tasks(int argc, char** argv);
int cmd_calibrate(int argc, char** argv);    // task layer: route/intent temperature and thresholds
int cmd_build_corpus(int argc, char** argv);  // bilingual pretraining corpus (docs/corpus.md)
int cmd_mopd(int argc, char** argv);   // multi-teacher on-policy distillation (docs/mopd.md)
int cmd_loop(int argc, char** argv);   // the SFT loop engine with a regression gate (docs/mopd.md)
int cmd_import(int argc, char** argv);  // a .pocket package -> a training checkpoint (fine-tune it further)
int cmd_grow(int argc, char** argv);    // a checkpoint -> a deeper one with the same function (depth growth)
int cmd_drafter_data(int argc, char** argv);  // the target's greedy outputs for block drafter training
int cmd_drafter(int argc, char** argv);       // train a block drafter for a target (docs/training.md)

}  // namespace pocket::train::cli
