// pocket-train's subcommands; each is a thin main over the train/ libraries.
#pragma once

#include "run/train_config.h"

namespace pocket::train::cli {

int cmd_train(Stage stage, int argc, char** argv);  // pretrain, sft
int cmd_export(int argc, char** argv);
int cmd_eval(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_make_data(int argc, char** argv);

}  // namespace pocket::train::cli
