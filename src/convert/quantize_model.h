// `pocket quantize`: rewrite a package's weight matrices in a block format under a per-tensor precision
// policy. Norms and biases stay f32; the embedding and the output head can be given their own precision.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "format/dtype.h"
#include "quant/importance.h"

namespace pocket {

struct QuantizePolicy {
  DType matrices = DType::kQ4G32;   // every attention/FFN matrix
  std::optional<DType> embed;       // token_embd.weight (default: `matrices`)
  std::optional<DType> head;        // output.weight when untied (default: `matrices`); with tied
                                    // embeddings the one tensor takes the more precise of embed and head
  bool interleave = true;           // Q4G32 matrices with a multiple of 8 rows (the embedding table too: it
                                    // is also the tied LM head) are written as Q4G32R8, the kernels' layout
  // Activation statistics (`pocket imatrix`): a block-quantised matrix whose name has an entry is fitted by
  // quant::quantize_tensor_weighted; one without stays plain round-to-nearest. With tied embeddings the
  // statistics are the LM head's input, recorded under "token_embd.weight". Not owned; nullptr: off.
  const quant::ImportanceMap* importance = nullptr;
};

// What quantize_model did, for the command's report.
struct QuantizeReport {
  int n_weighted = 0;  // matrices fitted with importance
  int n_plain = 0;     // block-quantised matrices without statistics (plain round-to-nearest)
};

// The dtype a tensor of this name and row count is stored as under `policy` once its precision `dst` is
// chosen: Q4G32 becomes Q4G32R8 where the layout applies (see QuantizePolicy::interleave).
DType storage_dtype(DType dst, const std::string& name, uint64_t rows, bool interleave);

// Reads IN, writes OUT; every source dtype (f32/f16/bf16/block types) is dequantised to f32 rows first.
// An importance entry whose length differs from the tensor's column count is an error (statistics from
// another model).
Status quantize_model(const std::string& in_path, const std::string& out_path, const QuantizePolicy& policy,
                      QuantizeReport* report = nullptr);

// "q4_g32" | "q4" -> Q4G32, "q4_g64", "q4_g32a", "q8" | "q8_g32", "f16", "bf16", "f32".
std::optional<DType> parse_quant_type(const std::string& name);

}  // namespace pocket
