// ggml block dequantisers against blocks encoded by the test from the layout documented in ggml_dequant.h
// (an independent encoder: scales, mins and quants are chosen, packed, decoded and compared).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "convert/ggml_dequant.h"
#include "core/half.h"

namespace pocket {
namespace {

void put_half(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

// Packs the 6-bit scales and mins of 8 sub-blocks as Q4_K/Q5_K do.
void pack_k_scales(const int sc[8], const int m[8], uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

TEST(GgmlDequant, Q4KAndQ5KFollowTheDocumentedLayout) {
  std::mt19937 rng(3);
  for (bool five : {false, true}) {
    for (int trial = 0; trial < 20; ++trial) {
      int sc[8], m[8], q[256];
      for (int s = 0; s < 8; ++s) sc[s] = rng() % 64, m[s] = rng() % 64;
      for (int& x : q) x = static_cast<int>(rng() % (five ? 32 : 16));
      const float d = 0.0123f, dmin = 0.0071f;
      std::vector<uint8_t> b(five ? 176 : 144, 0);
      put_half(b.data(), d);
      put_half(b.data() + 2, dmin);
      pack_k_scales(sc, m, b.data() + 4);
      uint8_t* qh = five ? b.data() + 16 : nullptr;
      uint8_t* qs = b.data() + (five ? 48 : 16);
      for (int i = 0; i < 256; ++i) {
        const int g = i / 64, half = (i % 64) / 32, l = i % 32, s = 2 * g + half;
        qs[32 * g + l] |= static_cast<uint8_t>((q[i] & 15) << (4 * half));
        if (five && (q[i] & 16)) qh[l] |= static_cast<uint8_t>(1 << s);
      }
      float out[256];
      ASSERT_TRUE(ggml_dequantize_row(five ? ggml::kQ5_K : ggml::kQ4_K, b.data(), 256, out).is_ok());
      const float dd = f16_to_f32(f32_to_f16(d)), dm = f16_to_f32(f32_to_f16(dmin));
      for (int i = 0; i < 256; ++i) {
        const int s = i / 32;
        EXPECT_FLOAT_EQ(out[i], dd * sc[s] * q[i] - dm * m[s]) << "element " << i << (five ? " Q5_K" : " Q4_K");
      }
    }
  }
}

TEST(GgmlDequant, Q6KFollowsTheDocumentedLayout) {
  std::mt19937 rng(5);
  int q[256], sc[16];
  for (int& x : q) x = static_cast<int>(rng() % 64);
  for (int& x : sc) x = static_cast<int>(rng() % 256) - 128;
  std::vector<uint8_t> b(210, 0);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, r = i % 128, quarter = r / 32, l = r % 32;
    uint8_t* ql = b.data() + 64 * h;
    uint8_t* qh = b.data() + 128 + 32 * h;
    const int lo = q[i] & 15, hi = q[i] >> 4;
    ql[l + (quarter & 1) * 32] |= static_cast<uint8_t>(lo << (quarter >= 2 ? 4 : 0));
    qh[l] |= static_cast<uint8_t>(hi << (2 * quarter));
  }
  for (int j = 0; j < 16; ++j) b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(sc[j]));
  put_half(b.data() + 208, 0.031f);
  float out[256];
  ASSERT_TRUE(ggml_dequantize_row(ggml::kQ6_K, b.data(), 256, out).is_ok());
  const float d = f16_to_f32(f32_to_f16(0.031f));
  for (int i = 0; i < 256; ++i) {
    const int scale = sc[i / 16];  // 16 scales, one per 16 consecutive elements
    EXPECT_FLOAT_EQ(out[i], d * scale * (q[i] - 32)) << "element " << i;
  }
}

TEST(GgmlDequant, SmallBlockTypes) {
  uint8_t b[34] = {};
  put_half(b, 0.5f);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  float out[32];
  ASSERT_TRUE(ggml_dequantize_row(ggml::kQ4_0, b, 32, out).is_ok());
  EXPECT_EQ(out[0], -4.0f);
  EXPECT_EQ(out[16], 3.5f);
  uint8_t c[20] = {};
  put_half(c, 0.25f);
  put_half(c + 2, -1.0f);
  c[4] = 0x3F;
  ASSERT_TRUE(ggml_dequantize_row(ggml::kQ4_1, c, 32, out).is_ok());
  EXPECT_EQ(out[0], -1.0f + 15 * 0.25f);
  EXPECT_EQ(out[16], -1.0f + 3 * 0.25f);
  uint8_t e[34] = {};
  put_half(e, 2.0f);
  e[2 + 5] = static_cast<uint8_t>(-7);
  ASSERT_TRUE(ggml_dequantize_row(ggml::kQ8_0, e, 32, out).is_ok());
  EXPECT_EQ(out[5], -14.0f);
}

TEST(GgmlDequant, UnsupportedTypesAreNamed) {
  uint8_t b[256] = {};
  float out[256];
  Status st = ggml_dequantize_row(10, b, 256, out);  // Q2_K
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  EXPECT_NE(st.message().find("Q2_K"), std::string::npos) << st.message();
  EXPECT_EQ(ggml_dequantize_row(ggml::kQ8_0, b, 31, out).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace pocket
