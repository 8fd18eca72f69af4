// Importer for llama2.c "v0" checkpoints (float32 .bin: a 7 x int32 header, then the weights) and their
// tok*.bin tokenizer, into a .pocket package.
#pragma once

#include <string>

#include "core/status.h"
#include "format/dtype.h"

namespace pocket {

struct Llama2cImportOptions {
  std::string tokenizer_path;  // tok*.bin; required
  DType dtype = DType::kF32;   // weight matrices: f32, f16 or bf16 (norms stay f32)
  std::string name;            // model name for the descriptor; default: the file name
};

Status import_llama2c(const std::string& checkpoint_path, const std::string& out_path, const Llama2cImportOptions& opts);

}  // namespace pocket
