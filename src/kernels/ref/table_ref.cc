// The scalar table: portable, and the ground truth every ISA table is tested against.
#include "core/half.h"
#include "kernels/ref/attention_ref.h"
#include "kernels/ref/matmul_ref.h"
#include "kernels/ref/ops_ref.h"
#include "kernels/tables.h"
#include "quant/quantize.h"

namespace pocket::kernels {

const KernelTable& ref_table() {
  static const KernelTable t = [] {
    KernelTable k;
    k.name = "ref";
    k.matmul_q8g32 = ref::matmul_q8g32;
    k.matmul_q4g32 = ref::matmul_q4g32;
    k.matmul_q4g64 = ref::matmul_q4g64;
    k.matmul_q4g32a = ref::matmul_q4g32a;
    k.matmul_q4g32r8 = ref::matmul_q4g32r8;
    k.matmul_f32 = ref::matmul_f32;
    k.matmul_f16 = ref::matmul_f16;
    k.quantize_act = quant::quantize_act_row_ref;
    k.rmsnorm = pocket::ref::rmsnorm;
    k.softmax = pocket::ref::softmax;
    k.rope = ref::rope_heads;
    k.swiglu = pocket::ref::swiglu;
    k.attention = ref::attention;
    k.f32_to_f16 = [](uint16_t* out, const float* in, int64_t n) {
      for (int64_t i = 0; i < n; ++i) out[i] = pocket::f32_to_f16(in[i]);
    };
    return k;
  }();
  return t;
}

}  // namespace pocket::kernels
