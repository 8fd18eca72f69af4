// Dequantisation of the ggml tensor types a GGUF model may hold, written from the block layouts below
// (little-endian, packed; d/dmin are IEEE f16). Used by the GGUF importer; rows are whole blocks.
//
//   F32 (0), F16 (1), BF16 (30): plain elements.
//   Q4_0 (2), 32 elements, 18 bytes: f16 d; u8 qs[16]. Byte j: element j in the low nibble, element j+16 in
//       the high nibble; x = (q - 8) * d.                 (byte-identical to pocket's Q4G32)
//   Q4_1 (3), 32 elements, 20 bytes: f16 d; f16 m; u8 qs[16] (nibbles as Q4_0); x = q * d + m.
//                                                         (byte-identical to pocket's Q4G32A)
//   Q8_0 (8), 32 elements, 34 bytes: f16 d; i8 qs[32]; x = q * d.  (byte-identical to pocket's Q8G32)
//   The K types group 256 elements ("super-block") into sub-blocks with 6-bit or 8-bit scales:
//   Q4_K (12), 144 bytes: f16 d; f16 dmin; u8 scales[12]; u8 qs[128].
//       Eight sub-blocks of 32; sub-block s has a 6-bit scale sc[s] and a 6-bit min m[s] packed in scales[]:
//         s < 4: sc = scales[s] & 63,  m = scales[s + 4] & 63
//         s >= 4: sc = (scales[s + 4] & 15) | ((scales[s - 4] >> 6) << 4),
//                 m  = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4)
//       Elements come in 4 groups of 64: group g reads qs[32g .. 32g+32); its first 32 elements are the low
//       nibbles (sub-block 2g), the next 32 the high nibbles (sub-block 2g+1). x = d * sc * q - dmin * m.
//   Q5_K (13), 176 bytes: f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128].
//       As Q4_K, plus a fifth bit: element l of sub-block s (l < 32) adds 16 when bit s of qh[l] is set.
//   Q6_K (14), 210 bytes: u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d.
//       Two halves of 128 elements; half h uses ql[64h ..], qh[32h ..], scales[8h ..]. For l < 32:
//         q0 = (ql[l] & 15)      | ((qh[l] >> 0 & 3) << 4)   -> element l,      scale scales[l/16 + 0]
//         q1 = (ql[l + 32] & 15) | ((qh[l] >> 2 & 3) << 4)   -> element l + 32, scale scales[l/16 + 2]
//         q2 = (ql[l] >> 4)      | ((qh[l] >> 4 & 3) << 4)   -> element l + 64, scale scales[l/16 + 4]
//         q3 = (ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)   -> element l + 96, scale scales[l/16 + 6]
//       x = d * scale * (q - 32).
#pragma once

#include <cstdint>

#include "core/status.h"

namespace pocket {

namespace ggml {
inline constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14,
                          kBF16 = 30;
}  // namespace ggml

// True for the types ggml_dequantize_row() decodes.
bool ggml_can_dequantize(uint32_t type);

// Decodes `n` elements (a multiple of the type's block) from `src` into out[0..n). kUnsupported naming
// the type otherwise.
Status ggml_dequantize_row(uint32_t type, const uint8_t* src, int64_t n, float* out);

}  // namespace pocket
