// ImportanceMap: per-input-column activation statistics of a model's weight matrices (mean of x_k^2 over a
// calibration text), written by `pocket imatrix` and read by `pocket quantize --imatrix`.
//
// File format (.imatrix), little-endian, no padding:
//   offset 0   char[8]  magic "PKIMTX\0\0"
//          8   u32      version (1)
//         12   u32      n_entries (1 .. 65536)
//         16   u64      n_tokens: calibration tokens the statistics were gathered over (>= 1)
//         24   n_entries entries, each:
//                u32    name_len (1 .. 256), then name_len bytes of tensor name (no NUL), e.g.
//                       "blk.3.attn_q.weight" (the tied head's statistics sit under "token_embd.weight")
//                u32    n_cols (1 .. 2^24), then n_cols f32: mean x_k^2 for column k, each finite and >= 0
//   The file ends exactly after the last entry. Names are unique.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace pocket::quant {

struct ImportanceMap {
  uint64_t n_tokens = 0;
  std::map<std::string, std::vector<float>> columns;  // tensor name -> [n_cols] mean x_k^2

  // nullptr when `name` has no statistics.
  const std::vector<float>* find(const std::string& name) const {
    auto it = columns.find(name);
    return it == columns.end() ? nullptr : &it->second;
  }
};

inline constexpr uint32_t kImportanceVersion = 1;
inline constexpr uint32_t kImportanceMaxEntries = 65536;
inline constexpr uint32_t kImportanceMaxName = 256;
inline constexpr uint32_t kImportanceMaxCols = 1u << 24;

// Serialises `m` (validated the same way as on read; an invalid map is refused, not written).
[[nodiscard]] Status write_importance(const std::string& path, const ImportanceMap& m);
// Parses bytes of an .imatrix file; `what` names the source in error messages.
[[nodiscard]] Expected<ImportanceMap> parse_importance(const uint8_t* data, uint64_t size, const std::string& what);
[[nodiscard]] Expected<ImportanceMap> read_importance(const std::string& path);

}  // namespace pocket::quant
