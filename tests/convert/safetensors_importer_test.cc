// Hugging Face safetensors import: tiny random Llama, Qwen2 (q/k/v bias) and Qwen3 (q/k-norm) checkpoints
// written by the test give the logits of an independent reference forward pass (f32 within 1e-5), from F32,
// F16 and BF16 sources and sharded checkpoints; unsupported configurations are refused by name.
#include <gtest/gtest.h>

#include "convert/hf_fixture.h"
#include "convert/safetensors_importer.h"
#include "format/package.h"

namespace pocket {
namespace {

using testing::HfModel;

const std::vector<int32_t> kTokens = {3, 17, 256, 257, 40, 2, 88, 61, 5, 12, 259, 0};

class SafetensorsImport : public ::testing::Test {
 protected:
  // Imports `m` written as `src_dtype` and compares the package's logits with the reference.
  void check(const HfModel& m, const std::string& src_dtype, int shards = 1) {
    const std::string ckpt = dir_.file(m.arch + "-" + src_dtype);
    testing::write_hf_checkpoint(m, ckpt, src_dtype, shards);
    SafetensorsImportOptions o;
    const std::string out = dir_.file(m.arch + ".pocket");
    Status st = import_safetensors(ckpt, out, o);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    std::string err;
    const auto got = testing::package_logits(out, kTokens, &err);
    ASSERT_FALSE(got.empty()) << err;
    const auto want = testing::hf_reference_logits(m, kTokens);
    EXPECT_LT(testing::max_abs_diff(got, want), 1e-5f) << m.arch << " from " << src_dtype;
  }
  testing::TempDir dir_;
};

TEST_F(SafetensorsImport, LlamaMatchesReference) { check(testing::make_hf_model("llama", false, "F32"), "F32"); }
TEST_F(SafetensorsImport, LlamaTiedMatchesReference) { check(testing::make_hf_model("llama", true, "F32"), "F32"); }
TEST_F(SafetensorsImport, Qwen2BiasMatchesReference) { check(testing::make_hf_model("qwen2", true, "F32"), "F32"); }
TEST_F(SafetensorsImport, Qwen3QkNormMatchesReference) { check(testing::make_hf_model("qwen3", true, "F32"), "F32"); }
TEST_F(SafetensorsImport, F16SourceMatchesReference) { check(testing::make_hf_model("qwen2", false, "F16"), "F16"); }
TEST_F(SafetensorsImport, BF16SourceMatchesReference) { check(testing::make_hf_model("llama", true, "BF16"), "BF16"); }
TEST_F(SafetensorsImport, ShardedCheckpointMatchesReference) { check(testing::make_hf_model("qwen3", false, "F32"), "F32", 3); }

TEST_F(SafetensorsImport, DescriptorRecordsTheArchitecture) {
  const auto m = testing::make_hf_model("qwen3", true, "F32");
  testing::write_hf_checkpoint(m, dir_.file("c"), "F32");
  ASSERT_TRUE(import_safetensors(dir_.file("c"), dir_.file("o.pocket"), {}).is_ok());
  auto pkg = Package::open(dir_.file("o.pocket"));
  ASSERT_TRUE(pkg);
  auto h = HParams::from_json(pkg->descriptor_json());
  ASSERT_TRUE(h);
  EXPECT_EQ(h->rope_style, RopeStyle::kNeox);
  EXPECT_TRUE(h->qk_norm);
  EXPECT_FALSE(h->qkv_bias);
  EXPECT_TRUE(h->tied_embeddings);
  EXPECT_EQ(h->head_dim, 32);
  EXPECT_EQ(h->q_dim(), 128);
}

TEST_F(SafetensorsImport, ImportsToQ8) {
  const auto m = testing::make_hf_model("llama", false, "F32");
  testing::write_hf_checkpoint(m, dir_.file("c"), "F32");
  SafetensorsImportOptions o;
  o.dtype = DType::kQ8G32;
  ASSERT_TRUE(import_safetensors(dir_.file("c"), dir_.file("q8.pocket"), o).is_ok());
  std::string err;
  const auto got = testing::package_logits(dir_.file("q8.pocket"), kTokens, &err);
  ASSERT_FALSE(got.empty()) << err;
  EXPECT_LT(testing::max_abs_diff(got, testing::hf_reference_logits(m, kTokens)), 0.1f);
}

void write_text(const std::string& path, const std::string& s) {
  testing::write_file(path, std::vector<uint8_t>(s.begin(), s.end()));
}

TEST_F(SafetensorsImport, RefusesUnsupportedArchitectureByName) {
  auto m = testing::make_hf_model("llama", false, "F32");
  testing::write_hf_checkpoint(m, dir_.file("c"), "F32");
  auto cfg = nlohmann::json::parse(testing::hf_config_json(m));
  cfg["architectures"] = {"GPTNeoXForCausalLM"};
  write_text(dir_.file("c/config.json"), cfg.dump());
  Status st = import_safetensors(dir_.file("c"), dir_.file("o.pocket"), {});
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  EXPECT_NE(st.message().find("GPTNeoXForCausalLM"), std::string::npos) << st.message();
}

TEST_F(SafetensorsImport, RefusesRopeScalingAndOtherActivations) {
  auto m = testing::make_hf_model("llama", false, "F32");
  auto cfg = nlohmann::json::parse(testing::hf_config_json(m));
  cfg["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  auto r = parse_hf_config(cfg.dump(), "config.json");
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("llama3"), std::string::npos);
  cfg["rope_scaling"] = nullptr;
  cfg["hidden_act"] = "gelu";
  r = parse_hf_config(cfg.dump(), "config.json");
  EXPECT_NE(r.status().message().find("gelu"), std::string::npos);
}

TEST_F(SafetensorsImport, RefusesUnsupportedDtypeByName) {
  auto m = testing::make_hf_model("llama", false, "F32");
  testing::write_hf_checkpoint(m, dir_.file("c"), "F32");
  // Re-label one tensor as I32 (same element size, so the file stays well-formed).
  auto bytes = testing::read_file(dir_.file("c/model.safetensors"));
  std::string text(bytes.begin() + 8, bytes.begin() + 8 + 64 * 1024 < bytes.end() ? bytes.begin() + 8 + 64 * 1024 : bytes.end());
  const size_t at = text.find("\"F32\"");
  ASSERT_NE(at, std::string::npos);
  std::memcpy(bytes.data() + 8 + at, "\"I32\"", 5);
  testing::write_file(dir_.file("c/model.safetensors"), bytes);
  Status st = import_safetensors(dir_.file("c"), dir_.file("o.pocket"), {});
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  EXPECT_NE(st.message().find("I32"), std::string::npos) << st.message();
}

TEST_F(SafetensorsImport, ShapeDisagreeingWithConfigNamesBoth) {
  auto m = testing::make_hf_model("llama", false, "F32");
  testing::write_hf_checkpoint(m, dir_.file("c"), "F32");
  auto cfg = nlohmann::json::parse(testing::hf_config_json(m));
  cfg["intermediate_size"] = 81;
  write_text(dir_.file("c/config.json"), cfg.dump());
  Status st = import_safetensors(dir_.file("c"), dir_.file("o.pocket"), {});
  EXPECT_EQ(st.code(), ErrorCode::kCorruptFile);
  EXPECT_NE(st.message().find("mlp.down_proj"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("81"), std::string::npos) << st.message();
}

TEST_F(SafetensorsImport, MissingTensorAndUnknownTensorAreNamed) {
  auto m = testing::make_hf_model("llama", false, "F32");
  auto m2 = m;
  m2.w.erase("model.layers.1.mlp.up_proj.weight");
  testing::write_hf_checkpoint(m2, dir_.file("a"), "F32");
  Status st = import_safetensors(dir_.file("a"), dir_.file("o.pocket"), {});
  EXPECT_NE(st.message().find("blk.1.ffn_up.weight"), std::string::npos) << st.message();
  auto m3 = m;
  m3.w["model.layers.0.self_attn.o_proj.bias"] = {{64}, std::vector<float>(64)};
  testing::write_hf_checkpoint(m3, dir_.file("b"), "F32");
  st = import_safetensors(dir_.file("b"), dir_.file("o.pocket"), {});
  EXPECT_NE(st.message().find("o_proj.bias"), std::string::npos) << st.message();
}

TEST_F(SafetensorsImport, IndexPointingOutsideTheFolderIsRefused) {
  auto m = testing::make_hf_model("llama", false, "F32");
  testing::write_hf_checkpoint(m, dir_.file("c"), "F32", 2);
  write_text(dir_.file("c/model.safetensors.index.json"),
             R"({"weight_map": {"model.norm.weight": "../../etc/passwd"}})");
  Status st = import_safetensors(dir_.file("c"), dir_.file("o.pocket"), {});
  EXPECT_EQ(st.code(), ErrorCode::kCorruptFile);
  EXPECT_NE(st.message().find("not a file name"), std::string::npos) << st.message();
}

TEST_F(SafetensorsImport, GenerationConfigGivesStopTokens) {
  auto m = testing::make_hf_model("qwen2", true, "F32");
  testing::write_hf_checkpoint(m, dir_.file("c"), "F32");
  write_text(dir_.file("c/generation_config.json"), R"({"eos_token_id": [256, 257], "temperature": 0.7, "top_k": 20})");
  ASSERT_TRUE(import_safetensors(dir_.file("c"), dir_.file("o.pocket"), {}).is_ok());
  auto pkg = Package::open(dir_.file("o.pocket"));
  ASSERT_TRUE(pkg);
  auto cfg = InferenceConfig::from_json(pkg->config_json());
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->stop_tokens, (std::vector<int32_t>{256, 257}));
  EXPECT_NEAR(cfg->sampling.temperature, 0.7f, 1e-6);
  EXPECT_EQ(cfg->sampling.top_k, 20);
}

TEST(HfNames, MapsEveryLayerTensor) {
  EXPECT_EQ(*hf_to_pocket_tensor_name("model.layers.12.self_attn.q_norm.weight"), "blk.12.attn_q_norm.weight");
  EXPECT_EQ(*hf_to_pocket_tensor_name("model.layers.0.mlp.down_proj.weight"), "blk.0.ffn_down.weight");
  EXPECT_EQ(*hf_to_pocket_tensor_name("model.layers.3.self_attn.rotary_emb.inv_freq"), "");
  EXPECT_FALSE(hf_to_pocket_tensor_name("model.layers.01.mlp.up_proj.weight"));
  EXPECT_FALSE(hf_to_pocket_tensor_name("model.layers..mlp.up_proj.weight"));
  EXPECT_FALSE(hf_to_pocket_tensor_name("transformer.h.0.attn.weight"));
}

}  // namespace
}  // namespace pocket
