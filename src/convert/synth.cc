// Random weights: N(0, 0.02) matrices (scaled so activations stay O(1) through the layers), unit norms.
#include "convert/synth.h"

#include <cmath>
#include <vector>

#include "convert/tensor_fill.h"
#include "format/package_writer.h"
#include "model/model.h"
#include "sampling/rng.h"
#include "convert/quantize_model.h"
#include "tokenizer/hf_loader.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket {

namespace {

// A SentencePiece-style placeholder vocabulary: <unk>, <s>, </s>, 256 byte tokens, the space marker, then
// unused filler pieces.
Expected<std::vector<uint8_t>> placeholder_tokenizer(int64_t n_vocab) {
  if (n_vocab < 260) return invalid_argument("[synth] a vocabulary needs at least 260 tokens (3 special, 256 bytes, space)");
  TokenizerData d;
  d.model = TokenizerModel::kSentencePiece;
  d.pieces = {"<unk>", "<s>", "</s>"};
  d.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    d.pieces.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    d.types.push_back(TokenType::kByte);
  }
  // The space marker as a token of its own, so that spaces round-trip as spaces.
  d.pieces.push_back("\xE2\x96\x81");
  d.types.push_back(TokenType::kNormal);
  for (int64_t i = static_cast<int64_t>(d.pieces.size()); i < n_vocab; ++i) {
    d.pieces.push_back("[tok" + std::to_string(i) + "]");
    d.types.push_back(TokenType::kUnused);
  }
  d.scores.assign(d.pieces.size(), 0.0f);
  d.unk_id = 0;
  d.bos_id = 1;
  d.eos_id = 2;
  d.add_bos = true;
  d.add_dummy_prefix = true;
  d.space_marker = "\xE2\x96\x81";
  d.source = "synth placeholder";
  POCKET_ASSIGN_OR_RETURN(auto tok, build_tokenizer(std::move(d)));
  return tok->serialize();
}

}  // namespace

Status synthesize_model(const HParams& h, const std::string& out_path, const SynthOptions& opts) {
  POCKET_RETURN_IF_ERROR(h.validate());
  std::vector<uint8_t> tok_bytes;
  InferenceConfig cfg;
  cfg.add_bos = true;
  if (opts.tokenizer_json.empty()) {
    POCKET_ASSIGN_OR_RETURN(tok_bytes, placeholder_tokenizer(h.n_vocab));
  } else {
    POCKET_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, load_hf_tokenizer(opts.tokenizer_json));
    if (tok->n_vocab() > h.n_vocab) {
      return invalid_argument("[synth] the tokenizer has " + std::to_string(tok->n_vocab()) + " tokens, more than the " +
                              std::to_string(h.n_vocab) + " of the architecture: " + opts.tokenizer_json);
    }
    if (const auto* dt = dynamic_cast<const DataTokenizer*>(tok.get())) cfg.add_bos = dt->data().add_bos;
    const std::string tmpl(tok->chat_template_name());
    cfg.chat_template = tmpl.empty() || tmpl.rfind("unrecognised", 0) == 0 ? "none" : tmpl;
    if (tok->eos_id() >= 0) cfg.stop_tokens.push_back(tok->eos_id());
    tok_bytes = tok->serialize();
  }
  PackageWriter pw;
  pw.set_descriptor(h.to_json());
  cfg.context_length = opts.context_length > 0 ? opts.context_length : std::min<int64_t>(h.n_ctx_train, 4096);
  if (cfg.context_length > h.n_ctx_train) return invalid_argument("[synth] context length exceeds n_ctx_train");
  pw.set_inference_config(cfg.to_json());
  pw.set_tokenizer(std::move(tok_bytes));

  uint64_t tensor_index = 0;
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    const uint64_t seed = opts.seed * 1000003ull + tensor_index++;
    const float stdev = 1.0f / std::sqrt(static_cast<float>(cols));
    const DType t = storage_dtype(opts.dtype, name, static_cast<uint64_t>(rows), opts.interleave);
    return pw.add_tensor(name, t, {static_cast<uint64_t>(rows), static_cast<uint64_t>(cols)},
                         [=](std::span<uint8_t> out) {
                           Rng rng(seed);
                           std::vector<float> v(static_cast<size_t>(rows * cols));
                           // Sum of 4 uniforms: cheap, bell-shaped, variance 4/12 — rescaled to stdev.
                           const float k = stdev * std::sqrt(3.0f);
                           for (auto& x : v) {
                             double u = rng.uniform() + rng.uniform() + rng.uniform() + rng.uniform() - 2.0;
                             x = static_cast<float>(u) * k;
                           }
                           return convert_f32(v, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), out);
                         });
  };
  auto ones = [&](const std::string& name, int64_t n) {
    std::vector<float> v(static_cast<size_t>(n), 1.0f);
    return pw.add_tensor(name, DType::kF32, {static_cast<uint64_t>(n)},
                         std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4));
  };
  auto zeros = [&](const std::string& name, int64_t n) {
    std::vector<uint8_t> v(static_cast<size_t>(n) * 4, 0);
    return pw.add_tensor(name, DType::kF32, {static_cast<uint64_t>(n)}, v);
  };
  const int64_t d = h.n_embd;
  POCKET_RETURN_IF_ERROR(matrix("token_embd.weight", h.n_vocab, d));
  for (int64_t l = 0; l < h.n_layers; ++l) {
    auto n = [&](const char* s) { return layer_tensor_name(l, s); };
    POCKET_RETURN_IF_ERROR(ones(n("attn_norm.weight"), d));
    POCKET_RETURN_IF_ERROR(matrix(n("attn_q.weight"), h.q_dim(), d));
    POCKET_RETURN_IF_ERROR(matrix(n("attn_k.weight"), h.kv_dim(), d));
    POCKET_RETURN_IF_ERROR(matrix(n("attn_v.weight"), h.kv_dim(), d));
    POCKET_RETURN_IF_ERROR(matrix(n("attn_output.weight"), d, h.q_dim()));
    if (h.qkv_bias) {
      POCKET_RETURN_IF_ERROR(zeros(n("attn_q.bias"), h.q_dim()));
      POCKET_RETURN_IF_ERROR(zeros(n("attn_k.bias"), h.kv_dim()));
      POCKET_RETURN_IF_ERROR(zeros(n("attn_v.bias"), h.kv_dim()));
    }
    if (h.qk_norm) {
      POCKET_RETURN_IF_ERROR(ones(n("attn_q_norm.weight"), h.head_dim));
      POCKET_RETURN_IF_ERROR(ones(n("attn_k_norm.weight"), h.head_dim));
    }
    POCKET_RETURN_IF_ERROR(ones(n("ffn_norm.weight"), d));
    POCKET_RETURN_IF_ERROR(matrix(n("ffn_gate.weight"), h.n_ff, d));
    POCKET_RETURN_IF_ERROR(matrix(n("ffn_up.weight"), h.n_ff, d));
    POCKET_RETURN_IF_ERROR(matrix(n("ffn_down.weight"), d, h.n_ff));
  }
  POCKET_RETURN_IF_ERROR(ones("output_norm.weight", d));
  if (!h.tied_embeddings) POCKET_RETURN_IF_ERROR(matrix("output.weight", h.n_vocab, d));
  return pw.write(out_path);
}

}  // namespace pocket
