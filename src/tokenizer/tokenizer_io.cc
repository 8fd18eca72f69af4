// The .pocket tokenizer section and the llama2.c tokenizer file; formats in tokenizer_io.h.
#include "tokenizer/tokenizer_io.h"

#include <cstring>

#include "core/mapped_file.h"
#include "format/byte_reader.h"
#include "tokenizer/json_guard.h"

namespace pocket {
namespace {

void put_u32(std::vector<uint8_t>* out, uint32_t v) {
  const size_t at = out->size();
  out->resize(at + 4);
  std::memcpy(out->data() + at, &v, 4);
}
void put_f32(std::vector<uint8_t>* out, float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  put_u32(out, u);
}
void put_bytes(std::vector<uint8_t>* out, std::string_view s) { out->insert(out->end(), s.begin(), s.end()); }

constexpr uint64_t kEntryFixedBytes = 12;  // len + type + score
constexpr uint64_t kMergeBytes = 8;

Status truncated(const std::string& name, const std::string& what, uint64_t at) {
  return corrupt_file("[tokenizer] section truncated in " + what + " at byte " + std::to_string(at) + ": " + name);
}

// Reads an optional field of the metadata object with the right type, or fails naming it.
template <typename T>
Status meta_field(const nlohmann::json& meta, const char* key, T* out, const std::string& name) {
  auto it = meta.find(key);
  if (it == meta.end() || it->is_null()) return Status::ok();
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return corrupt_file(std::string("[tokenizer] metadata '") + key + "' is not a bool: " + name);
    *out = it->template get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return corrupt_file(std::string("[tokenizer] metadata '") + key + "' is not a string: " + name);
    *out = it->template get<std::string>();
  } else {
    if (!it->is_number_integer()) {
      return corrupt_file(std::string("[tokenizer] metadata '") + key + "' is not an integer: " + name);
    }
    const int64_t v = it->template get<int64_t>();
    if (v < -1 || v > INT32_MAX) {
      return corrupt_file(std::string("[tokenizer] metadata '") + key + "' = " + std::to_string(v) +
                          " is out of range: " + name);
    }
    *out = static_cast<T>(v);
  }
  return Status::ok();
}

}  // namespace

std::vector<uint8_t> serialize_tokenizer_data(const TokenizerData& d) {
  nlohmann::json meta = {
      {"bos", d.bos_id},
      {"eos", d.eos_id},
      {"unk", d.unk_id},
      {"pad", d.pad_id},
      {"add_bos", d.add_bos},
      {"add_eos", d.add_eos},
      {"add_dummy_prefix", d.add_dummy_prefix},
      {"space_marker", d.space_marker},
      {"pre_tokenizer", d.pre_tokenizer},
      {"normalizer", d.normalizer},
      {"ignore_merges", d.ignore_merges},
      {"chat_template", d.chat_template},
      {"max_token_length", d.max_token_length},
  };
  const std::string meta_text = meta.dump();
  std::vector<uint8_t> out;
  put_u32(&out, kTokenizerSectionMagic);
  put_u32(&out, kTokenizerSectionVersion);
  put_u32(&out, static_cast<uint32_t>(d.model));
  put_u32(&out, static_cast<uint32_t>(d.pieces.size()));
  put_u32(&out, static_cast<uint32_t>(d.merges.size()));
  put_u32(&out, static_cast<uint32_t>(meta_text.size()));
  put_bytes(&out, meta_text);
  for (size_t i = 0; i < d.pieces.size(); ++i) {
    put_u32(&out, static_cast<uint32_t>(d.pieces[i].size()));
    put_u32(&out, static_cast<uint32_t>(d.types.empty() ? TokenType::kNormal : d.types[i]));
    put_f32(&out, d.scores.empty() ? 0.0f : d.scores[i]);
    put_bytes(&out, d.pieces[i]);
  }
  for (const auto& [a, b] : d.merges) {
    put_u32(&out, static_cast<uint32_t>(a));
    put_u32(&out, static_cast<uint32_t>(b));
  }
  return out;
}

Expected<TokenizerData> parse_tokenizer_section(std::span<const uint8_t> bytes, const std::string& name) {
  ByteReader r(bytes);
  uint32_t magic, version, model, n_vocab, n_merges, meta_len;
  if (!r.read(&magic)) return truncated(name, "the header", r.position());
  if (magic != kTokenizerSectionMagic) return corrupt_file("[tokenizer] section has the wrong magic: " + name);
  if (!r.read(&version)) return truncated(name, "the header", r.position());
  if (version != kTokenizerSectionVersion) {
    return unsupported("[tokenizer] section version " + std::to_string(version) + " (this build reads " +
                       std::to_string(kTokenizerSectionVersion) + "): " + name);
  }
  if (!r.read(&model) || !r.read(&n_vocab) || !r.read(&n_merges) || !r.read(&meta_len)) {
    return truncated(name, "the header", r.position());
  }
  if (model != static_cast<uint32_t>(TokenizerModel::kSentencePiece) &&
      model != static_cast<uint32_t>(TokenizerModel::kByteLevelBpe)) {
    return unsupported("[tokenizer] unknown model " + std::to_string(model) + ": " + name);
  }
  if (n_vocab == 0 || n_vocab > static_cast<uint32_t>(kMaxVocab)) {
    return corrupt_file("[tokenizer] n_vocab " + std::to_string(n_vocab) + " outside 1.." + std::to_string(kMaxVocab) +
                        ": " + name);
  }
  if (n_merges > static_cast<uint32_t>(kMaxMerges)) {
    return corrupt_file("[tokenizer] n_merges " + std::to_string(n_merges) + " exceeds the limit: " + name);
  }
  if (meta_len > kMaxTokenizerMetaBytes) {
    return corrupt_file("[tokenizer] metadata of " + std::to_string(meta_len) + " bytes exceeds the limit: " + name);
  }
  // Counts against the bytes left, before any allocation (all products fit in 64 bits by the limits above).
  const uint64_t min_rest = uint64_t{meta_len} + n_vocab * kEntryFixedBytes + n_merges * kMergeBytes;
  if (min_rest > r.remaining()) {
    return corrupt_file("[tokenizer] section claims " + std::to_string(n_vocab) + " tokens and " +
                        std::to_string(n_merges) + " merges, needing at least " + std::to_string(min_rest) +
                        " bytes, but only " + std::to_string(r.remaining()) + " remain: " + name);
  }
  TokenizerData d;
  d.source = name;
  d.model = static_cast<TokenizerModel>(model);
  std::string_view meta_text;
  if (!r.read_string(meta_len, &meta_text)) return truncated(name, "the metadata", r.position());
  if (meta_len > 0) {
    POCKET_ASSIGN_OR_RETURN(nlohmann::json meta, parse_json_guarded(meta_text, "tokenizer metadata of " + name));
    if (!meta.is_object()) return corrupt_file("[tokenizer] metadata is not a JSON object: " + name);
    POCKET_RETURN_IF_ERROR(meta_field(meta, "bos", &d.bos_id, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "eos", &d.eos_id, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "unk", &d.unk_id, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "pad", &d.pad_id, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "add_bos", &d.add_bos, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "add_eos", &d.add_eos, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "add_dummy_prefix", &d.add_dummy_prefix, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "space_marker", &d.space_marker, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "pre_tokenizer", &d.pre_tokenizer, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "normalizer", &d.normalizer, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "ignore_merges", &d.ignore_merges, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "chat_template", &d.chat_template, name));
    POCKET_RETURN_IF_ERROR(meta_field(meta, "max_token_length", &d.max_token_length, name));
  }
  d.pieces.resize(n_vocab);
  d.types.resize(n_vocab);
  d.scores.resize(n_vocab);
  for (uint32_t i = 0; i < n_vocab; ++i) {
    uint32_t len, type;
    float score;
    if (!r.read(&len) || !r.read(&type) || !r.read(&score)) return truncated(name, "token " + std::to_string(i), r.position());
    if (len > kMaxPieceBytes) {
      return corrupt_file("[tokenizer] token " + std::to_string(i) + " claims " + std::to_string(len) + " bytes: " + name);
    }
    std::string_view text;
    if (!r.read_string(len, &text)) return truncated(name, "token " + std::to_string(i), r.position());
    if (type > static_cast<uint32_t>(TokenType::kUnused)) {
      return corrupt_file("[tokenizer] token " + std::to_string(i) + " has unknown type " + std::to_string(type) +
                          ": " + name);
    }
    d.pieces[i] = std::string(text);
    d.types[i] = static_cast<TokenType>(type);
    d.scores[i] = score;
  }
  if (n_merges * kMergeBytes != r.remaining()) {
    return corrupt_file("[tokenizer] " + std::to_string(r.remaining()) + " bytes left for " + std::to_string(n_merges) +
                        " merges of 8 bytes (truncated or trailing data): " + name);
  }
  d.merges.resize(n_merges);
  for (uint32_t m = 0; m < n_merges; ++m) {
    int32_t a = 0, b = 0;
    (void)r.read(&a);
    (void)r.read(&b);
    d.merges[m] = {a, b};
  }
  POCKET_RETURN_IF_ERROR(validate_tokenizer_data(d));
  return d;
}

Expected<TokenizerData> read_llama2c_tokenizer(std::span<const uint8_t> bytes, int32_t n_vocab, const std::string& name) {
  if (n_vocab <= 0 || n_vocab > kMaxVocab) {
    return invalid_argument("[tokenizer] n_vocab " + std::to_string(n_vocab) + " outside 1.." +
                            std::to_string(kMaxVocab) + " for " + name);
  }
  ByteReader r(bytes);
  int32_t max_len;
  if (!r.read(&max_len)) return corrupt_file("[tokenizer] llama2.c tokenizer truncated in its header: " + name);
  if (max_len <= 0 || static_cast<uint32_t>(max_len) > kMaxPieceBytes) {
    return corrupt_file("[tokenizer] llama2.c max_token_length " + std::to_string(max_len) + " is out of range: " + name);
  }
  if (uint64_t{static_cast<uint32_t>(n_vocab)} * 8 > r.remaining()) {
    return corrupt_file("[tokenizer] llama2.c tokenizer of " + std::to_string(bytes.size()) + " bytes cannot hold " +
                        std::to_string(n_vocab) + " tokens: " + name);
  }
  TokenizerData d;
  d.source = name;
  d.model = TokenizerModel::kSentencePiece;
  d.space_marker = " ";
  d.add_dummy_prefix = true;
  d.add_bos = true;
  d.max_token_length = static_cast<uint32_t>(max_len);
  d.pieces.resize(n_vocab);
  d.scores.resize(n_vocab);
  d.types.assign(n_vocab, TokenType::kNormal);
  for (int32_t i = 0; i < n_vocab; ++i) {
    float score;
    int32_t len;
    if (!r.read(&score) || !r.read(&len)) {
      return corrupt_file("[tokenizer] llama2.c tokenizer truncated at token " + std::to_string(i) + " of " +
                          std::to_string(n_vocab) + ": " + name);
    }
    if (len < 0 || len > max_len) {
      return corrupt_file("[tokenizer] llama2.c token " + std::to_string(i) + " has length " + std::to_string(len) +
                          " (max_token_length " + std::to_string(max_len) + "): " + name);
    }
    std::string_view text;
    if (!r.read_string(static_cast<uint64_t>(len), &text)) {
      return corrupt_file("[tokenizer] llama2.c tokenizer truncated in token " + std::to_string(i) + ": " + name);
    }
    d.pieces[i] = std::string(text);
    d.scores[i] = score;
    if (looks_like_byte_token(text)) d.types[i] = TokenType::kByte;
  }
  // llama2.c's fixed layout: 0 <unk>, 1 BOS, 2 EOS.
  if (n_vocab >= 3) {
    d.unk_id = 0;
    d.bos_id = 1;
    d.eos_id = 2;
    d.types[0] = TokenType::kUnknown;
    d.types[1] = TokenType::kControl;
    d.types[2] = TokenType::kControl;
  }
  POCKET_RETURN_IF_ERROR(validate_tokenizer_data(d));
  return d;
}

Expected<std::unique_ptr<Tokenizer>> load_llama2c_tokenizer(const std::string& path, int32_t n_vocab) {
  POCKET_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  POCKET_ASSIGN_OR_RETURN(TokenizerData data, read_llama2c_tokenizer(file.bytes(), n_vocab, path));
  return build_tokenizer(std::move(data));
}

Expected<std::unique_ptr<Tokenizer>> load_tokenizer_section(std::span<const uint8_t> bytes) {
  POCKET_ASSIGN_OR_RETURN(TokenizerData data, parse_tokenizer_section(bytes, "tokenizer section"));
  return build_tokenizer(std::move(data));
}

std::vector<uint8_t> DataTokenizer::serialize() const { return serialize_tokenizer_data(data_); }

}  // namespace pocket
