// A .pocket package -> a training checkpoint (step 0) that `pocket-train sft --init`, `eval`, `export` and
// `loop --init` read like one the trainer wrote (torch-free header; the libtorch code is in the .cc).
#pragma once

#include <string>

#include "core/status.h"
#include "run/grow.h"
#include "run/checkpoint.h"
#include "run/package_import.h"

namespace pocket::train {

struct ImportSummary {
  std::string checkpoint;   // run_dir/ckpt-0000000
  CheckpointMeta meta;      // what meta.json holds
  uint64_t n_params = 0;
  std::string source_type;  // the package's weight type ("q4_g32", "f32", ...)
};

// Decodes `package` (import_package) and writes run_dir/ckpt-0000000/{model.pt, optim.pt, rng.pt, meta.json,
// tokenizer.bin} and run_dir/latest through the trainer's own atomic commit. optim.pt holds a fresh AdamW
// (no moments) with the trainer's two parameter groups, so the directory is a complete checkpoint; meta.json's
// config is an SFT stage with the package's chat template and `threads`. Refuses a run_dir that already
// holds a checkpoint (an import never overwrites training progress).
Expected<ImportSummary> import_checkpoint(const std::string& package, const std::string& run_dir, int32_t threads = 0);

// `pocket-train grow`: the checkpoint at `source` (a run directory or ckpt-* directory) grown wider by
// grow_width (when `width` asks for anything) and then deeper by grow_depth (when new_layers > 0) -- both keep
// the function (run/grow.h) -- and written as run_dir/ckpt-0000000 like an import (fresh optimiser, SFT stage,
// the source's tokenizer, chat template and sequence length). source_type says what was grown. Refuses a
// run_dir that already holds a checkpoint, and a request that grows nothing.
struct GrowRequest {
  int64_t new_layers = 0;  // 0 = keep the depth
  WidthSpec width;         // all 0 = keep the width
};
Expected<ImportSummary> grow_checkpoint(const std::string& source, const std::string& run_dir, const GrowRequest& req,
                                        int32_t threads = 0);

}  // namespace pocket::train
