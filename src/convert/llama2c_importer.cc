// llama2.c checkpoint import. The header is validated (positive, bounded, consistent) and the file size
// must equal exactly what the header implies before any weight is read.
#include "convert/llama2c_importer.h"

#include <cstring>
#include <filesystem>

#include "convert/tensor_fill.h"
#include "core/checked_math.h"
#include "core/mapped_file.h"
#include "format/package_writer.h"
#include "model/hparams.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pocket {

Status import_llama2c(const std::string& path, const std::string& out_path, const Llama2cImportOptions& opts) {
  if (opts.tokenizer_path.empty()) return invalid_argument("[llama2c] a tokenizer (tok*.bin) is required");
  if (opts.dtype != DType::kF32 && opts.dtype != DType::kF16 && opts.dtype != DType::kBF16) {
    return invalid_argument("[llama2c] weights can be written as f32, f16 or bf16 (quantise with `pocket quantize`)");
  }
  POCKET_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  const auto bytes = file.bytes();
  if (bytes.size() < 28) {
    return corrupt_file("[llama2c] header truncated: " + std::to_string(bytes.size()) + " bytes, need 28: " + path);
  }
  int32_t hdr[7];
  std::memcpy(hdr, bytes.data(), sizeof hdr);
  const char* names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  const bool shared = hdr[5] > 0;
  if (hdr[5] < 0) hdr[5] = -hdr[5];
  const int64_t limits[7] = {1 << 16, 1 << 20, 1024, 1024, 1024, 1 << 22, 1 << 24};
  for (int i = 0; i < 7; ++i) {
    if (hdr[i] <= 0 || hdr[i] > limits[i]) {
      return corrupt_file("[llama2c] header field " + std::string(names[i]) + " = " + std::to_string(hdr[i]) +
                          " is outside 1.." + std::to_string(limits[i]) + ": " + path);
    }
  }
  HParams h;
  h.name = opts.name.empty() ? std::filesystem::path(path).stem().string() : opts.name;
  h.n_embd = hdr[0];
  h.n_ff = hdr[1];
  h.n_layers = hdr[2];
  h.n_heads = hdr[3];
  h.n_kv_heads = hdr[4];
  h.n_vocab = hdr[5];
  h.n_ctx_train = hdr[6];
  h.tied_embeddings = shared;
  h.rope_theta = 10000.0f;
  h.norm_eps = 1e-5f;
  h.rope_style = RopeStyle::kInterleaved;
  if (h.n_embd % h.n_heads != 0) {
    return corrupt_file("[llama2c] dim " + std::to_string(h.n_embd) + " is not a multiple of n_heads " +
                        std::to_string(h.n_heads) + ": " + path);
  }
  h.head_dim = h.n_embd / h.n_heads;
  Status hv = h.validate();
  if (!hv.is_ok()) return Status(hv.code(), hv.message() + ": " + path);

  // Expected size, in floats, section by section (llama2.c order).
  const uint64_t d = h.n_embd, L = h.n_layers, kv = h.kv_dim(), ff = h.n_ff, V = h.n_vocab;
  struct Part {
    const char* name;
    uint64_t per_layer_rows, cols;  // rows of one layer (or of the whole tensor when not per layer)
    bool per_layer;
  };
  const Part parts[] = {
      {"token_embd", V, d, false}, {"attn_norm", 1, d, true},  {"attn_q", d, d, true},     {"attn_k", kv, d, true},
      {"attn_v", kv, d, true},     {"attn_output", d, d, true}, {"ffn_norm", 1, d, true}, {"ffn_gate", ff, d, true},
      {"ffn_down", d, ff, true},   {"ffn_up", ff, d, true},     {"output_norm", 1, d, false},
  };
  std::vector<uint64_t> offsets;  // float offsets of each part
  uint64_t at = 0;
  for (const auto& p : parts) {
    offsets.push_back(at);
    at += (p.per_layer ? L : 1) * p.per_layer_rows * p.cols;
  }
  at += static_cast<uint64_t>(h.n_ctx_train) * (h.head_dim / 2) * 2;  // freq_cis_real/imag, unused
  const uint64_t wcls_off = at;
  if (!shared) at += V * d;
  const uint64_t want = 28 + at * 4;
  if (bytes.size() != want) {
    return corrupt_file("[llama2c] file is " + std::to_string(bytes.size()) + " bytes but its header implies " +
                        std::to_string(want) + " (" + (bytes.size() < want ? "truncated" : "trailing data") + "): " + path);
  }
  const float* w = reinterpret_cast<const float*>(bytes.data() + 28);  // 28 is 4-aligned; mmap is page-aligned

  POCKET_ASSIGN_OR_RETURN(auto tok, load_llama2c_tokenizer(opts.tokenizer_path, static_cast<int32_t>(V)));

  PackageWriter pw;
  pw.set_descriptor(h.to_json());
  InferenceConfig cfg;
  cfg.context_length = h.n_ctx_train;
  cfg.add_bos = true;
  cfg.stop_tokens = {1};  // llama2.c: BOS delimits sequences, so generation stops at it
  pw.set_inference_config(cfg.to_json());
  pw.set_tokenizer(tok->serialize());

  auto add = [&](const std::string& name, uint64_t float_off, uint64_t rows, uint64_t cols, bool matrix) {
    const DType t = matrix ? opts.dtype : DType::kF32;
    std::vector<uint64_t> shape = rows == 1 && !matrix ? std::vector<uint64_t>{cols} : std::vector<uint64_t>{rows, cols};
    return pw.add_tensor(name, t, shape, [=](std::span<uint8_t> out) {
      return convert_f32(std::span<const float>(w + float_off, rows * cols), t, rows, cols, out);
    });
  };
  POCKET_RETURN_IF_ERROR(add("token_embd.weight", offsets[0], V, d, true));
  for (uint64_t l = 0; l < L; ++l) {
    for (size_t i = 1; i + 1 < std::size(parts); ++i) {
      const Part& p = parts[i];
      const uint64_t off = offsets[i] + l * p.per_layer_rows * p.cols;
      const bool matrix = p.per_layer_rows > 1;
      POCKET_RETURN_IF_ERROR(add(layer_tensor_name(static_cast<int64_t>(l), p.name) + ".weight", off, p.per_layer_rows, p.cols, matrix));
    }
  }
  POCKET_RETURN_IF_ERROR(add("output_norm.weight", offsets[10], 1, d, false));
  if (!shared) POCKET_RETURN_IF_ERROR(add("output.weight", wcls_off, V, d, true));
  return pw.write(out_path);
}

}  // namespace pocket
