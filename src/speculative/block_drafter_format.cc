// The block drafter's descriptor: parsing (untrusted input: every field checked, errors name the field),
// writing, and the target check.
#include "speculative/block_drafter_format.h"

#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "speculative/drafter.h"

namespace pocket {

namespace {

using json = nlohmann::json;

Status field_error(const std::string& what) { return corrupt_file("[drafter] " + what); }

Expected<int64_t> get_int(const json& j, const char* key, const char* where) {
  auto it = j.find(key);
  if (it == j.end()) return field_error(std::string("missing field '") + where + key + "'");
  if (!it->is_number_integer()) return field_error(std::string("field '") + where + key + "' must be an integer");
  return it->get<int64_t>();
}

Expected<uint64_t> parse_fingerprint(const std::string& s) {
  constexpr std::string_view kPrefix = "xxh3:";
  if (s.size() != kPrefix.size() + 16 || s.compare(0, kPrefix.size(), kPrefix) != 0) {
    return field_error("target.fingerprint must be \"xxh3:\" and 16 hex digits, got \"" + s + "\"");
  }
  uint64_t v = 0;
  for (size_t i = kPrefix.size(); i < s.size(); ++i) {
    const char c = s[i];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return field_error("target.fingerprint has a non-hex digit: \"" + s + "\"");
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

uint64_t package_fingerprint(const Package& p) {
  for (const SectionEntry& e : p.sections()) {
    if (e.kind == static_cast<uint32_t>(SectionKind::kTensorData)) return e.checksum;
  }
  return 0;
}

std::string fingerprint_string(uint64_t fp) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "xxh3:%016" PRIx64, fp);
  return buf;
}

bool is_drafter_descriptor(std::string_view descriptor_json) {
  json j = json::parse(descriptor_json.begin(), descriptor_json.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return false;
  auto it = j.find("kind");
  return it != j.end() && it->is_string() && it->get<std::string>() == "drafter";
}

Status BlockDrafterConfig::validate() const {
  POCKET_RETURN_IF_ERROR(blocks.validate());
  if (block_size < 1 || block_size > kMaxDraft) {
    return field_error("block_size " + std::to_string(block_size) + " is out of range 1.." + std::to_string(kMaxDraft));
  }
  if (blocks.qkv_bias || blocks.qk_norm) return field_error("drafter blocks take no q/k/v biases and no q/k norms");
  if (target_n_layers < 1) return field_error("target.n_layers must be positive");
  if (target_layers.empty() || target_layers.size() > 8) {
    return field_error("target_layers must name 1..8 layers, got " + std::to_string(target_layers.size()));
  }
  for (size_t i = 0; i < target_layers.size(); ++i) {
    const int32_t l = target_layers[i];
    if (l < 0 || l >= target_n_layers || (i > 0 && l <= target_layers[i - 1])) {
      return field_error("target_layers must be increasing and each in 0.." + std::to_string(target_n_layers - 1) +
                         "; got " + std::to_string(l) + " at position " + std::to_string(i));
    }
  }
  if (target_n_embd != blocks.n_embd) {
    return field_error("the drafter's n_embd " + std::to_string(blocks.n_embd) + " differs from target.n_embd " +
                       std::to_string(target_n_embd) + " (it shares the target's embedding and LM head)");
  }
  if (target_n_vocab != blocks.n_vocab) {
    return field_error("n_vocab " + std::to_string(blocks.n_vocab) + " differs from target.n_vocab " +
                       std::to_string(target_n_vocab));
  }
  return Status::ok();
}

std::string BlockDrafterConfig::to_json() const {
  json j = json::parse(blocks.to_json());
  j["kind"] = "drafter";
  j["drafter"] = "block";
  j["block_size"] = block_size;
  j["target_layers"] = target_layers;
  j["target"] = {{"name", target_name},
                 {"fingerprint", fingerprint_string(target_fingerprint)},
                 {"n_layers", target_n_layers},
                 {"n_vocab", target_n_vocab},
                 {"n_embd", target_n_embd}};
  return j.dump(1);
}

Expected<BlockDrafterConfig> BlockDrafterConfig::from_json(std::string_view text) {
  BlockDrafterConfig c;
  POCKET_ASSIGN_OR_RETURN(c.blocks, HParams::from_json(text));  // bounds nesting, checks the block keys
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return field_error("descriptor is not a JSON object");
  auto str = [&](const json& o, const char* key) -> std::string {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (str(j, "kind") != "drafter") return field_error("descriptor is not a drafter's (\"kind\" is not \"drafter\")");
  if (str(j, "drafter") != "block") {
    return unsupported("[drafter] drafter type '" + str(j, "drafter") + "' is not supported (block)");
  }
  POCKET_ASSIGN_OR_RETURN(int64_t bs, get_int(j, "block_size", ""));
  if (bs < 1 || bs > kMaxDraft) return field_error("block_size " + std::to_string(bs) + " is out of range");
  c.block_size = static_cast<int32_t>(bs);
  auto tl = j.find("target_layers");
  if (tl == j.end() || !tl->is_array()) return field_error("missing array 'target_layers'");
  if (tl->size() > 8) return field_error("target_layers names more than 8 layers");
  for (const json& v : *tl) {
    if (!v.is_number_integer()) return field_error("target_layers must hold integers");
    const int64_t l = v.get<int64_t>();
    if (l < 0 || l > 1 << 20) return field_error("target_layers holds " + std::to_string(l));
    c.target_layers.push_back(static_cast<int32_t>(l));
  }
  auto t = j.find("target");
  if (t == j.end() || !t->is_object()) return field_error("missing object 'target'");
  c.target_name = str(*t, "name");
  POCKET_ASSIGN_OR_RETURN(c.target_fingerprint, parse_fingerprint(str(*t, "fingerprint")));
  POCKET_ASSIGN_OR_RETURN(c.target_n_layers, get_int(*t, "n_layers", "target."));
  POCKET_ASSIGN_OR_RETURN(c.target_n_vocab, get_int(*t, "n_vocab", "target."));
  POCKET_ASSIGN_OR_RETURN(c.target_n_embd, get_int(*t, "n_embd", "target."));
  POCKET_RETURN_IF_ERROR(c.validate());
  return c;
}

Status BlockDrafterConfig::check_target(const Model& target) const {
  const HParams& h = target.hparams();
  const uint64_t fp = package_fingerprint(target.package());
  const std::string who = "the drafter was trained for '" + target_name + "' (" + fingerprint_string(target_fingerprint) +
                          ", " + std::to_string(target_n_layers) + " layers, width " + std::to_string(target_n_embd) +
                          ", vocabulary " + std::to_string(target_n_vocab) + ") but the target is '" + h.name + "' (" +
                          fingerprint_string(fp) + ", " + std::to_string(h.n_layers) + " layers, width " +
                          std::to_string(h.n_embd) + ", vocabulary " + std::to_string(h.n_vocab) + ")";
  if (fp != target_fingerprint || h.n_layers != target_n_layers || h.n_embd != target_n_embd ||
      h.n_vocab != target_n_vocab) {
    return invalid_argument("[drafter] wrong target: " + who +
                            "; a block drafter runs only with the exact weights it was trained against");
  }
  if (blocks.head_dim != h.head_dim || blocks.rope_style != h.rope_style || blocks.rope_theta != h.rope_theta) {
    return invalid_argument("[drafter] the drafter's head_dim/rope differ from the target's");
  }
  return Status::ok();
}

}  // namespace pocket
