// .pocket → GGUF: hyper-parameters and tokenizer to llama.cpp's metadata keys, weights carried over
// byte for byte where the block layouts coincide (Q8G32 = Q8_0, Q4G32 = Q4_0, Q4G32A = Q4_1) or requantised.
#include "convert/gguf_exporter.h"

#include <cstring>
#include <vector>

#include "convert/ggml_dequant.h"
#include "convert/gguf_writer.h"
#include "convert/row_fill.h"
#include "format/package.h"
#include "model/hparams.h"
#include "model/model.h"
#include "quant/quantize.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket {
namespace {

// llama.cpp's token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
int32_t gguf_token_type(TokenType t) {
  switch (t) {
    case TokenType::kNormal: return 1;
    case TokenType::kUnknown: return 2;
    case TokenType::kControl: return 3;
    case TokenType::kUserDefined: return 4;
    case TokenType::kUnused: return 5;
    case TokenType::kByte: return 6;
  }
  return 1;
}

// Row r of the permuted [n_heads * head_dim, cols] matrix comes from source row perm_row(r).
// to_interleaved: rotate-half order (i, i + hd/2) → pair order (2i, 2i + 1), as llama.cpp's converter does
// for Llama; otherwise the inverse.
int64_t perm_row(int64_t r, int64_t hd, bool to_interleaved) {
  const int64_t h = r / hd, i = r % hd, half = hd / 2;
  const int64_t src = to_interleaved ? (i % 2) * half + i / 2 : (i % half) * 2 + i / half;
  return h * hd + src;
}

uint32_t ggml_type_for(DType t) {
  switch (t) {
    case DType::kF32: return ggml::kF32;
    case DType::kF16: return ggml::kF16;
    case DType::kBF16: return ggml::kBF16;
    case DType::kQ8G32: return ggml::kQ8_0;
    case DType::kQ4G32: return ggml::kQ4_0;
    case DType::kQ4G32A: return ggml::kQ4_1;
    case DType::kQ4G64: return ggml::kQ4_0;  // no ggml equivalent: requantised
    case DType::kQ4G32R8: return ggml::kQ4_0;  // de-interleaved
  }
  return ggml::kF16;
}

uint32_t file_type_for(GgufExportType t) {  // llama.cpp's general.file_type (LLAMA_FTYPE_*)
  switch (t) {
    case GgufExportType::kF32: return 0;
    case GgufExportType::kF16: return 1;
    case GgufExportType::kQ4_0: return 2;
    case GgufExportType::kQ8_0: return 7;
    case GgufExportType::kKeep: return 1;
  }
  return 1;
}

void add_tokenizer(GgufWriter* w, const TokenizerData& d, int64_t n_vocab) {
  const bool spm = d.model == TokenizerModel::kSentencePiece;
  w->add_string("tokenizer.ggml.model", spm ? "llama" : "gpt2");
  if (!spm) {
    const std::string pre = d.pre_tokenizer == "llama3" ? "llama-bpe" : d.pre_tokenizer == "qwen2" ? "qwen2" : "gpt-2";
    w->add_string("tokenizer.ggml.pre", pre);
  } else {
    w->add_string("tokenizer.ggml.pre", "default");
  }
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  const size_t n = d.pieces.size();
  for (size_t i = 0; i < n; ++i) {
    std::string p = d.pieces[i];
    const TokenType t = d.types.empty() ? TokenType::kNormal : d.types[i];
    // llama.cpp's SentencePiece vocabularies mark spaces with U+2581; llama2.c's use a real space.
    if (spm && d.space_marker == " " && t == TokenType::kNormal) {
      std::string q;
      for (char c : p) q += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
      p = q;
    }
    tokens.push_back(std::move(p));
    scores.push_back(d.scores.empty() ? 0.0f : d.scores[i]);
    types.push_back(gguf_token_type(t));
  }
  // llama.cpp needs one token per embedding row: pad as its own converter does.
  for (int64_t i = static_cast<int64_t>(n); i < n_vocab; ++i) {
    tokens.push_back("[PAD" + std::to_string(i) + "]");
    scores.push_back(-1000.0f);
    types.push_back(5);
  }
  w->add_string_array("tokenizer.ggml.tokens", tokens);
  if (spm || !d.scores.empty()) w->add_f32_array("tokenizer.ggml.scores", scores);
  w->add_i32_array("tokenizer.ggml.token_type", types);
  if (!spm) {
    std::vector<std::string> merges;
    merges.reserve(d.merges.size());
    for (const auto& [a, b] : d.merges) merges.push_back(d.pieces[a] + " " + d.pieces[b]);
    w->add_string_array("tokenizer.ggml.merges", merges);
  }
  if (d.bos_id >= 0) w->add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(d.bos_id));
  if (d.eos_id >= 0) w->add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(d.eos_id));
  if (d.unk_id >= 0) w->add_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(d.unk_id));
  if (d.pad_id >= 0) w->add_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(d.pad_id));
  w->add_bool("tokenizer.ggml.add_bos_token", d.add_bos);
  w->add_bool("tokenizer.ggml.add_eos_token", d.add_eos);
  if (spm) w->add_bool("tokenizer.ggml.add_space_prefix", d.add_dummy_prefix);
}

}  // namespace

Status export_gguf(const std::string& pocket_path, const std::string& out_path, const GgufExportOptions& opts,
                   GgufExportReport* report) {
  POCKET_ASSIGN_OR_RETURN(std::shared_ptr<const Model> model, Model::load(pocket_path));
  const HParams& h = model->hparams();
  const Package& pkg = model->package();
  const auto* tok = dynamic_cast<const DataTokenizer*>(&model->tokenizer());
  if (tok == nullptr) return Status(ErrorCode::kInternal, "[gguf] the package's tokenizer exposes no data: " + pocket_path);
  const std::string arch = h.qk_norm ? "qwen3" : h.qkv_bias ? "qwen2" : "llama";
  const bool want_interleaved = arch == "llama";
  const bool permute = (h.rope_style == RopeStyle::kInterleaved) != want_interleaved;
  GgufExportReport local;
  GgufExportReport& rep = report ? *report : local;
  rep.arch = arch;

  GgufWriter w;
  w.add_string("general.architecture", arch);
  w.add_string("general.name", h.name.empty() ? "pocket" : h.name);
  w.add_u32("general.file_type", file_type_for(opts.type));
  const std::string a = arch + ".";
  w.add_u32(a + "context_length", static_cast<uint32_t>(h.n_ctx_train));
  w.add_u32(a + "embedding_length", static_cast<uint32_t>(h.n_embd));
  w.add_u32(a + "block_count", static_cast<uint32_t>(h.n_layers));
  w.add_u32(a + "feed_forward_length", static_cast<uint32_t>(h.n_ff));
  w.add_u32(a + "attention.head_count", static_cast<uint32_t>(h.n_heads));
  w.add_u32(a + "attention.head_count_kv", static_cast<uint32_t>(h.n_kv_heads));
  w.add_u32(a + "attention.key_length", static_cast<uint32_t>(h.head_dim));
  w.add_u32(a + "attention.value_length", static_cast<uint32_t>(h.head_dim));
  w.add_u32(a + "rope.dimension_count", static_cast<uint32_t>(h.head_dim));
  w.add_f32(a + "rope.freq_base", h.rope_theta);
  w.add_f32(a + "attention.layer_norm_rms_epsilon", h.norm_eps);
  w.add_u32(a + "vocab_size", static_cast<uint32_t>(h.n_vocab));
  add_tokenizer(&w, tok->data(), h.n_vocab);

  for (const TensorInfo& t : pkg.tensors()) {
    const int64_t cols = static_cast<int64_t>(t.cols()), rows = static_cast<int64_t>(t.rows());
    const bool matrix = t.shape.size() == 2;
    DType target = DType::kF32;
    if (matrix) {
      switch (opts.type) {
        case GgufExportType::kKeep:
          target = t.dtype == DType::kQ4G64 || t.dtype == DType::kQ4G32R8 ? DType::kQ4G32 : t.dtype;
          break;
        case GgufExportType::kF32: target = DType::kF32; break;
        case GgufExportType::kF16: target = DType::kF16; break;
        case GgufExportType::kQ8_0: target = DType::kQ8G32; break;
        case GgufExportType::kQ4_0: target = DType::kQ4G32; break;
      }
    }
    const bool block = target == DType::kQ8G32 || target == DType::kQ4G32 || target == DType::kQ4G32A;
    if (block && cols % 32 != 0) {
      rep.notes.push_back(t.name + ": rows of " + std::to_string(cols) + " are not whole 32-element blocks, written as F16");
      target = DType::kF16;
    }
    const bool is_qk = t.name.find(".attn_q.") != std::string::npos || t.name.find(".attn_k.") != std::string::npos;
    const bool is_qk_norm = t.name.find("_norm.weight") != std::string::npos &&
                            (t.name.find(".attn_q_norm") != std::string::npos || t.name.find(".attn_k_norm") != std::string::npos);
    const bool perm = permute && (is_qk || is_qk_norm);
    const int64_t hd = h.head_dim;
    const uint32_t gtype = ggml_type_for(target);
    std::vector<uint64_t> dims(t.shape.rbegin(), t.shape.rend());
    const TensorInfo* src = &t;
    POCKET_RETURN_IF_ERROR(w.add_tensor(t.name, dims, gtype, [src, target, rows, cols, perm, hd, to_il = want_interleaved](std::span<uint8_t> out) {
      const auto rb = row_bytes(src->dtype, static_cast<uint64_t>(cols));
      const std::span<const uint8_t> data(src->data, src->size);
      if (src->dtype == target && rows > 1) {  // carried byte for byte, rows permuted if needed
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t from = perm ? perm_row(r, hd, to_il) : r;
          std::memcpy(out.data() + r * *rb, data.data() + from * *rb, *rb);
        }
        return Status::ok();
      }
      if (src->dtype == DType::kQ4G32R8 && target == DType::kQ4G32) {  // Q4_0 blocks, de-interleaved losslessly
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t from = perm ? perm_row(r, hd, to_il) : r;
          quant::r8_row(reinterpret_cast<quant::BlockQ4G32*>(out.data() + r * *rb), data.data(), cols, from);
        }
        return Status::ok();
      }
      // Otherwise decode to f32 (with the element permutation of a 1-d q/k bias or norm) and re-encode.
      return fill_rows(target, rows, cols, [&](int64_t first, int64_t n, float* o) -> Status {
        std::vector<float> tmp(static_cast<size_t>(cols));
        for (int64_t i = 0; i < n; ++i) {
          const int64_t r = first + i;
          const int64_t from = perm && rows > 1 ? perm_row(r, hd, to_il) : r;
          POCKET_RETURN_IF_ERROR(quant::dequantize_row(src->dtype, data, rows, cols, from, tmp.data()));
          for (int64_t c = 0; c < cols; ++c) {
            o[i * cols + c] = perm && rows == 1 ? tmp[static_cast<size_t>(perm_row(c, hd, to_il))] : tmp[static_cast<size_t>(c)];
          }
        }
        return Status::ok();
      }, out);
    }));
  }
  return w.write(out_path);
}

}  // namespace pocket
