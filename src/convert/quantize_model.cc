// Package-to-package requantisation, streaming one tensor at a time.
#include "convert/quantize_model.h"

#include <cstring>
#include <vector>

#include "convert/tensor_fill.h"
#include "format/package.h"
#include "format/package_writer.h"
#include "kernels/ref/ops_ref.h"
#include "model/hparams.h"
#include "quant/quantize.h"
#include "quant/quantize_weighted.h"

namespace pocket {

namespace {

// Bits per weight, to pick the more precise of two dtypes.
double bits_per_weight(DType t) {
  auto info = dtype_info(static_cast<uint32_t>(t));
  return info ? 8.0 * info->block_bytes / info->block_elems : 0.0;
}

}  // namespace

DType storage_dtype(DType dst, const std::string& name, uint64_t rows, bool interleave) {
  (void)name;  // every q4_g32 matrix qualifies, the embedding table included (lookups decode one row of a group)
  if (interleave && dst == DType::kQ4G32 && rows % 8 == 0 && rows > 0) {
    return DType::kQ4G32R8;
  }
  return dst;
}

std::optional<DType> parse_quant_type(const std::string& name) {
  if (name == "q4" || name == "q4_g32") return DType::kQ4G32;
  if (name == "q4_g64") return DType::kQ4G64;
  if (name == "q4_g32a") return DType::kQ4G32A;
  if (name == "q8" || name == "q8_g32") return DType::kQ8G32;
  if (name == "f16") return DType::kF16;
  if (name == "bf16") return DType::kBF16;
  if (name == "f32") return DType::kF32;
  return std::nullopt;
}

Status quantize_model(const std::string& in_path, const std::string& out_path, const QuantizePolicy& policy,
                      QuantizeReport* report) {
  QuantizeReport rep;
  POCKET_ASSIGN_OR_RETURN(Package pkg, Package::open(in_path));
  POCKET_ASSIGN_OR_RETURN(HParams h, HParams::from_json(pkg.descriptor_json()));
  const DType embed = policy.embed.value_or(policy.matrices);
  const DType head = policy.head.value_or(policy.matrices);
  const DType tied = bits_per_weight(embed) >= bits_per_weight(head) ? embed : head;
  PackageWriter w;
  w.set_descriptor(std::string(pkg.descriptor_json()));
  w.set_inference_config(std::string(pkg.config_json()));
  auto tok = pkg.tokenizer_bytes();
  w.set_tokenizer(std::vector<uint8_t>(tok.begin(), tok.end()));
  for (const TensorInfo& t : pkg.tensors()) {
    DType dst;
    if (t.shape.size() < 2) {
      dst = DType::kF32;  // norms and biases
    } else if (t.name == "token_embd.weight") {
      dst = h.tied_embeddings ? tied : embed;
    } else if (t.name == "output.weight") {
      dst = head;
    } else {
      dst = policy.matrices;
    }
    if (t.shape.size() == 2) dst = storage_dtype(dst, t.name, t.shape[0], policy.interleave);
    const std::vector<float>* imp = nullptr;
    if (quant::is_quantised(dst) && t.dtype != dst) {
      if (policy.importance != nullptr) imp = policy.importance->find(t.name);
      if (imp != nullptr && imp->size() != t.cols()) {
        return invalid_argument("[quantize] the importance statistics for '" + t.name + "' have " +
                                std::to_string(imp->size()) + " columns, the tensor has " + std::to_string(t.cols()) +
                                " (statistics from another model?): " + in_path);
      }
      ++(imp != nullptr ? rep.n_weighted : rep.n_plain);
    }
    const TensorInfo* tp = &t;
    POCKET_RETURN_IF_ERROR(w.add_tensor(t.name, dst, t.shape, [tp, dst, imp](std::span<uint8_t> out) -> Status {
      if (tp->dtype == dst) {  // already in the target format: copied bit for bit
        std::memcpy(out.data(), tp->data, tp->size);
        return Status::ok();
      }
      if (tp->dtype == DType::kQ4G32 && dst == DType::kQ4G32R8) {  // the same blocks, rearranged
        quant::interleave_r8(out.data(), tp->data, static_cast<int64_t>(tp->rows()), static_cast<int64_t>(tp->cols()));
        return Status::ok();
      }
      if (tp->dtype == DType::kQ4G32R8 && dst == DType::kQ4G32) {
        const int64_t cols = static_cast<int64_t>(tp->cols());
        const uint64_t rb = *row_bytes(DType::kQ4G32, tp->cols());
        for (uint64_t r = 0; r < tp->rows(); ++r) {
          quant::r8_row(reinterpret_cast<quant::BlockQ4G32*>(out.data() + r * rb), tp->data, cols, static_cast<int64_t>(r));
        }
        return Status::ok();
      }
      std::vector<float> f;
      POCKET_RETURN_IF_ERROR(tensor_to_f32(*tp, &f));
      if (imp != nullptr) {
        return quant::quantize_tensor_weighted(dst, f.data(), static_cast<int64_t>(tp->rows()),
                                               static_cast<int64_t>(tp->cols()), *imp, out);
      }
      return convert_f32(f, dst, tp->rows(), tp->cols(), out);
    }));
  }
  POCKET_RETURN_IF_ERROR(w.write(out_path));
  if (report != nullptr) *report = rep;
  return Status::ok();
}

}  // namespace pocket
