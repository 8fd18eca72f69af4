// GGUF export and import: pocket → GGUF → pocket keeps the logits (F32/F16 within 1e-5 of the reference),
// Q8 through both routes (import as q8_g32; export Q8_0 from f32 and re-import) gives the same logits,
// the vocab GGUFs of ../shared/data survive export + import with their golden vectors, and stories260K
// round-trips exactly.
#include <gtest/gtest.h>

#include <random>

#include "convert/gguf_exporter.h"
#include "convert/gguf_importer.h"
#include "convert/gguf_reader.h"
#include "convert/gguf_tokenizer.h"
#include "convert/hf_fixture.h"
#include "convert/llama2c_importer.h"
#include "convert/safetensors_importer.h"
#include "format/package.h"
#include "format/package_writer.h"
#include "tokenizer/golden_vectors.h"

namespace pocket {
namespace {

const std::vector<int32_t> kTokens = {3, 17, 256, 257, 40, 2, 88, 61, 5, 12, 259, 0};

class GgufRoundTrip : public ::testing::Test {
 protected:
  // safetensors checkpoint → pocket package in `dt`.
  std::string import_hf(const testing::HfModel& m, DType dt, const std::string& tag) {
    const std::string ckpt = dir_.file("ckpt-" + tag);
    if (!std::filesystem::exists(ckpt)) testing::write_hf_checkpoint(m, ckpt, "F32");
    SafetensorsImportOptions o;
    o.dtype = dt;
    const std::string out = dir_.file(tag + ".pocket");
    Status st = import_safetensors(ckpt, out, o);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return out;
  }
  std::string through_gguf(const std::string& pkg, GgufExportType type, const std::string& tag) {
    GgufExportOptions eo;
    eo.type = type;
    const std::string gguf = dir_.file(tag + ".gguf");
    Status st = export_gguf(pkg, gguf, eo);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    const std::string back = dir_.file(tag + "-back.pocket");
    st = import_gguf(gguf, back, {});
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return back;
  }
  std::vector<std::vector<float>> logits(const std::string& path) {
    std::string err;
    auto l = testing::package_logits(path, kTokens, &err);
    EXPECT_FALSE(l.empty()) << err;
    return l;
  }
  testing::TempDir dir_;
};

TEST_F(GgufRoundTrip, F32MatchesReferenceForEveryArchitecture) {
  for (const char* arch : {"llama", "qwen2", "qwen3"}) {
    for (bool tied : {false, true}) {
      const auto m = testing::make_hf_model(arch, tied, "F32");
      const std::string tag = std::string(arch) + (tied ? "-tied" : "");
      const std::string pkg = import_hf(m, DType::kF32, tag);
      const std::string back = through_gguf(pkg, GgufExportType::kKeep, tag);
      const auto want = testing::hf_reference_logits(m, kTokens);
      EXPECT_LT(testing::max_abs_diff(logits(back), want), 1e-5f) << tag;
      auto pkg_back = Package::open(back);
      ASSERT_TRUE(pkg_back);
      auto h = HParams::from_json(pkg_back->descriptor_json());
      ASSERT_TRUE(h);
      EXPECT_EQ(h->rope_style, std::string(arch) == "llama" ? RopeStyle::kInterleaved : RopeStyle::kNeox) << tag;
      EXPECT_EQ(h->tied_embeddings, tied);
    }
  }
}

TEST_F(GgufRoundTrip, F16KeepsThePackageLogits) {
  const auto m = testing::make_hf_model("qwen2", false, "F32");
  const std::string pkg = import_hf(m, DType::kF16, "f16");
  const auto direct = logits(pkg);
  EXPECT_LT(testing::max_abs_diff(logits(through_gguf(pkg, GgufExportType::kKeep, "f16")), direct), 1e-5f);
  const std::string pkg32 = import_hf(m, DType::kF32, "f32");
  EXPECT_LT(testing::max_abs_diff(logits(through_gguf(pkg32, GgufExportType::kF16, "to-f16")), direct), 1e-5f);
}

// Route A imports the checkpoint straight to q8_g32; route B goes f32 → GGUF Q8_0 → pocket. The blocks are
// byte-identical, so qwen logits are identical; llama's q/k rows are permuted (RoPE order), which changes
// only the order of the attention dot products. Those ~1e-7 relative differences reach the next layer's
// activation quantisation: at Q4 (int8 activations) they rarely cross a rounding boundary; at Q8 the int8
// residual's grid is 254x finer (kernels::residual_activations), so crossings are common, each moving an
// activation by one residual step (2^-15 of its group's absmax): differences of ~1e-4 in these logits.
TEST_F(GgufRoundTrip, Q8AndQ4ThroughBothRoutesAgree) {
  for (const char* arch : {"qwen2", "qwen3", "llama"}) {
    const auto m = testing::make_hf_model(arch, false, "F32");
    const std::string a = arch;
    const auto direct_q8 = logits(import_hf(m, DType::kQ8G32, a + "-q8"));
    const auto via_gguf_q8 = logits(through_gguf(import_hf(m, DType::kF32, a + "-f32"), GgufExportType::kQ8_0, a + "-q8"));
    const auto direct_q4 = logits(import_hf(m, DType::kQ4G32, a + "-q4"));
    const auto via_gguf_q4 = logits(through_gguf(dir_.file(a + "-f32.pocket"), GgufExportType::kQ4_0, a + "-q4"));
    if (a == "llama") {
      EXPECT_LT(testing::max_abs_diff(via_gguf_q8, direct_q8), 1e-3f);
      EXPECT_LT(testing::max_abs_diff(via_gguf_q4, direct_q4), 1e-5f);
    } else {
      EXPECT_EQ(testing::max_abs_diff(via_gguf_q8, direct_q8), 0.0f) << a;
      EXPECT_EQ(testing::max_abs_diff(via_gguf_q4, direct_q4), 0.0f) << a;
    }
    // Carrying Q8_0 back keeps the bytes: exporting the q8 package again and importing is a fixed point.
    const float keep = testing::max_abs_diff(
        logits(through_gguf(dir_.file(a + "-q8.pocket"), GgufExportType::kKeep, a + "-q8k")), direct_q8);
    if (a == "llama") EXPECT_LT(keep, 1e-3f);
    else EXPECT_EQ(keep, 0.0f) << a;
  }
}

TEST_F(GgufRoundTrip, ImporterRefusesUnknownArchitectureAndMissingTensors) {
  const auto m = testing::make_hf_model("llama", true, "F32");
  const std::string gguf = dir_.file("m.gguf");
  ASSERT_TRUE(export_gguf(import_hf(m, DType::kF32, "x"), gguf, {}).is_ok());
  auto bytes = testing::read_file(gguf);
  // "llama" → "gemma" keeps every length, so only the architecture changes.
  std::string s(bytes.begin(), bytes.end());
  const size_t at = s.find("llama");
  ASSERT_NE(at, std::string::npos);
  std::memcpy(bytes.data() + at, "gemma", 5);
  testing::write_file(dir_.file("gemma.gguf"), bytes);
  Status st = import_gguf(dir_.file("gemma.gguf"), dir_.file("o.pocket"), {});
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  EXPECT_NE(st.message().find("'gemma'"), std::string::npos) << st.message();
  POCKET_REQUIRE_SHARED_DATA(data);
  st = import_gguf(data + "/tokenizers/vectors/ggml-vocab-llama-spm.gguf", dir_.file("o.pocket"), {});
  EXPECT_EQ(st.code(), ErrorCode::kCorruptFile);
  EXPECT_NE(st.message().find("token_embd.weight"), std::string::npos) << st.message();
}

// A vocabulary GGUF's tokenizer inside a tiny random model, exported and re-imported: the package's
// tokenizer still reproduces llama.cpp's golden vectors.
void vocab_roundtrip(const std::string& data, const std::string& vocab) {
  testing::TempDir dir;
  const std::string base = data + "/tokenizers/vectors/ggml-vocab-" + vocab + ".gguf";
  auto tok = load_gguf_tokenizer(base);
  ASSERT_TRUE(tok) << tok.status().to_string();
  HParams h;
  h.name = "vocab-" + vocab;
  h.n_vocab = (*tok)->n_vocab();
  h.n_embd = 8;
  h.n_layers = 1;
  h.n_heads = 2;
  h.n_kv_heads = 2;
  h.head_dim = 4;
  h.n_ff = 16;
  h.n_ctx_train = 32;
  PackageWriter pw;
  pw.set_descriptor(h.to_json());
  InferenceConfig ic;
  ic.context_length = 32;
  pw.set_inference_config(ic.to_json());
  pw.set_tokenizer((*tok)->serialize());
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 0.1f);
  auto add = [&](const std::string& n, std::vector<uint64_t> shape) {
    uint64_t c = 1;
    for (auto s : shape) c *= s;
    std::vector<float> v(c);
    for (float& x : v) x = nd(rng);
    ASSERT_TRUE(pw.add_tensor(n, DType::kF32, shape, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), c * 4)).is_ok());
  };
  const uint64_t V = h.n_vocab;
  add("token_embd.weight", {V, 8});
  add("output_norm.weight", {8});
  for (const char* n : {"attn_norm.weight", "ffn_norm.weight"}) add(std::string("blk.0.") + n, {8});
  for (const char* n : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"}) add(std::string("blk.0.") + n, {8, 8});
  add("blk.0.ffn_gate.weight", {16, 8});
  add("blk.0.ffn_up.weight", {16, 8});
  add("blk.0.ffn_down.weight", {8, 16});
  ASSERT_TRUE(pw.write(dir.file("v.pocket")).is_ok());
  ASSERT_TRUE(export_gguf(dir.file("v.pocket"), dir.file("v.gguf"), {}).is_ok());
  Status st = import_gguf(dir.file("v.gguf"), dir.file("back.pocket"), {});
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  auto model = Model::load(dir.file("back.pocket"));
  ASSERT_TRUE(model) << model.status().to_string();
  const auto cases = testing::read_golden(base + ".inp", base + ".out");
  ASSERT_FALSE(cases.empty());
  int failures = 0;
  for (const auto& c : cases) {
    std::vector<int32_t> ids;
    ASSERT_TRUE((*model)->tokenizer().encode(c.text, {}, &ids).is_ok());
    if (ids != c.ids) ++failures;
  }
  EXPECT_EQ(failures, 0) << vocab << ": " << failures << " of " << cases.size() << " golden cases differ after export + import";
  EXPECT_EQ((*model)->tokenizer().bos_id(), (*tok)->bos_id());
  EXPECT_EQ((*model)->tokenizer().eos_id(), (*tok)->eos_id());
}

TEST(GgufVocab, LlamaSpmSurvivesExportAndImport) {
  POCKET_REQUIRE_SHARED_DATA(data);
  vocab_roundtrip(data, "llama-spm");
}
TEST(GgufVocab, Gpt2SurvivesExportAndImport) {
  POCKET_REQUIRE_SHARED_DATA(data);
  vocab_roundtrip(data, "gpt-2");
}
TEST(GgufVocab, Phi3SurvivesExportAndImport) {
  POCKET_REQUIRE_SHARED_DATA(data);
  vocab_roundtrip(data, "phi-3");
}

TEST(GgufStories, Stories260KRoundTripsExactly) {
  POCKET_REQUIRE_SHARED_DATA(data);
  testing::TempDir dir;
  Llama2cImportOptions o;
  o.tokenizer_path = data + "/models/stories260K/tok512.bin";
  ASSERT_TRUE(import_llama2c(data + "/models/stories260K/stories260K.bin", dir.file("s.pocket"), o).is_ok());
  GgufExportReport rep;
  ASSERT_TRUE(export_gguf(dir.file("s.pocket"), dir.file("s.gguf"), {}, &rep).is_ok());
  EXPECT_EQ(rep.arch, "llama");
  ASSERT_TRUE(import_gguf(dir.file("s.gguf"), dir.file("back.pocket"), {}).is_ok());
  std::vector<int32_t> ids = {1, 403, 407, 261, 378, 426, 32, 34, 302, 275, 400, 370};
  std::string err;
  const auto a = testing::package_logits(dir.file("s.pocket"), ids, &err);
  const auto b = testing::package_logits(dir.file("back.pocket"), ids, &err);
  ASSERT_FALSE(a.empty() || b.empty()) << err;
  EXPECT_EQ(testing::max_abs_diff(a, b), 0.0f);
  // The exported SentencePiece vocabulary uses U+2581 for spaces, as llama.cpp expects.
  auto g = GgufFile::open(dir.file("s.gguf"));
  ASSERT_TRUE(g);
  auto tokens = g->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  bool marker = false;
  for (auto t : *tokens) marker |= t.find("\xE2\x96\x81") != std::string_view::npos;
  EXPECT_TRUE(marker);
  // Q8_0 export: ffn_down's rows of 172 are not whole blocks and fall back to F16 (reported).
  rep = {};
  ASSERT_TRUE(export_gguf(dir.file("s.pocket"), dir.file("s8.gguf"), {GgufExportType::kQ8_0}, &rep).is_ok());
  EXPECT_EQ(rep.notes.size(), 5u);
  ASSERT_TRUE(import_gguf(dir.file("s8.gguf"), dir.file("s8.pocket"), {}).is_ok());
  const auto c = testing::package_logits(dir.file("s8.pocket"), ids, &err);
  ASSERT_FALSE(c.empty()) << err;
  EXPECT_LT(testing::max_abs_diff(a, c), 0.5f);
}

}  // namespace
}  // namespace pocket
