// The block drafter's training data: per task prompt, the prompt's token ids and the target's own greedy
// continuation as the runtime emits it (stop token included). Written by `pocket-train drafter-data`, read
// by `pocket-train drafter` (docs/training.md, "Block drafter").
//
// File layout (little-endian):
//   "PKDD" | u32 version (1) | u64 n_sequences
//   per sequence: u8 task (TaskKind) | u8 lang (Lang) | u16 0 | u32 n_prompt | u32 n_generated
//                 | i32 ids[n_prompt + n_generated]   (prompt first, then the generated tokens)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/tasks.h"

namespace pocket::train {

struct DrafterSequence {
  TaskKind task = TaskKind::kExtract;
  Lang lang = Lang::kEn;
  int32_t n_prompt = 0;      // ids[0 .. n_prompt-1] are the prompt
  std::vector<int32_t> ids;  // prompt then the target's greedy output
  int32_t n_generated() const { return static_cast<int32_t>(ids.size()) - n_prompt; }
};

Status write_drafter_data(const std::string& path, const std::vector<DrafterSequence>& seqs);
Expected<std::vector<DrafterSequence>> read_drafter_data(const std::string& path);

}  // namespace pocket::train
