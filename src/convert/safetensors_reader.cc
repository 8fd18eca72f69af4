// safetensors reader; format and guarantees in safetensors_reader.h.
#include "convert/safetensors_reader.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "core/checked_math.h"
#include "core/half.h"

namespace pocket {
namespace {

using nlohmann::json;

struct DTypeEntry {
  const char* text;
  StDType t;
  uint64_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {"F32", StDType::kF32, 4},     {"F16", StDType::kF16, 2},      {"BF16", StDType::kBF16, 2},
    {"F64", StDType::kF64, 8},     {"I64", StDType::kI64, 8},      {"I32", StDType::kI32, 4},
    {"I16", StDType::kI16, 2},     {"I8", StDType::kI8, 1},        {"U8", StDType::kU8, 1},
    {"BOOL", StDType::kBool, 1},   {"F8_E4M3", StDType::kF8E4M3, 1}, {"F8_E5M2", StDType::kF8E5M2, 1},
    {"U16", StDType::kOther, 2},   {"U32", StDType::kOther, 4},    {"U64", StDType::kOther, 8},
};

constexpr int kMaxHeaderDepth = 8;  // the header needs 3 (object → tensor → shape)

Status fail(const std::string& what, const std::string& name) {
  return corrupt_file("[safetensors] " + what + ": " + name);
}

// Rejects nesting deeper than kMaxHeaderDepth before the recursive parser sees the text.
bool depth_ok(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > kMaxHeaderDepth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

// Parses the header, detecting duplicate keys in any object (nlohmann would keep only the last).
Expected<json> parse_header(std::string_view text, const std::string& name) {
  if (!depth_ok(text)) return fail("header JSON is nested deeper than " + std::to_string(kMaxHeaderDepth) + " levels", name);
  std::vector<std::unordered_set<std::string>> keys;
  std::string duplicate;
  json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (ev == json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (ev == json::parse_event_t::key && !keys.empty() && parsed.is_string()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
  } catch (const std::exception& e) {
    return fail(std::string("header is not valid JSON (") + e.what() + ")", name);
  }
  if (j.is_discarded()) return fail("header is not valid JSON (or not valid UTF-8)", name);
  if (!duplicate.empty()) return fail("duplicate key '" + duplicate.substr(0, 200) + "' in the header", name);
  if (!j.is_object()) return fail("header is not a JSON object", name);
  return j;
}

Status parse_tensor(const std::string& key, const json& v, std::span<const uint8_t> buffer, const std::string& name,
                    StTensor* t, uint64_t* begin) {
  const uint64_t buffer_size = buffer.size();
  const std::string what = "tensor '" + key.substr(0, 200) + "'";
  if (!v.is_object()) return fail(what + " is not an object", name);
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets") {
      return fail(what + " has unknown field '" + it.key().substr(0, 80) + "'", name);
    }
  }
  auto dt = v.find("dtype");
  auto sh = v.find("shape");
  auto off = v.find("data_offsets");
  if (dt == v.end() || !dt->is_string()) return fail(what + " has no string 'dtype'", name);
  if (sh == v.end() || !sh->is_array()) return fail(what + " has no array 'shape'", name);
  if (off == v.end() || !off->is_array() || off->size() != 2) return fail(what + " has no 'data_offsets' pair", name);
  t->name = key;
  t->dtype_text = dt->get<std::string>();
  uint64_t elem = 0;
  for (const auto& e : kDTypes) {
    if (t->dtype_text == e.text) {
      t->dtype = e.t;
      elem = e.size;
    }
  }
  if (elem == 0) return fail(what + " has unknown dtype '" + t->dtype_text.substr(0, 40) + "'", name);
  if (sh->size() > kSafetensorsMaxDims) {
    return fail(what + " has " + std::to_string(sh->size()) + " dimensions (at most " +
                    std::to_string(kSafetensorsMaxDims) + ")", name);
  }
  for (const json& d : *sh) {
    if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0)) {
      return fail(what + " has a shape entry that is not a non-negative integer", name);
    }
    const uint64_t x = d.get<uint64_t>();
    if (x == 0 || x > (uint64_t{1} << 40)) return fail(what + " has dimension " + std::to_string(x) + " (1..2^40)", name);
    t->shape.push_back(x);
  }
  const auto n = checked_product(t->shape);
  const auto bytes = n ? checked_mul(*n, elem) : std::nullopt;
  if (!bytes) return fail(what + " has a shape whose size overflows", name);
  t->n_elements = *n;
  for (const json& o : *off) {
    if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<int64_t>() >= 0)) {
      return fail(what + " has a data offset that is not a non-negative integer", name);
    }
  }
  const uint64_t b = (*off)[0].get<uint64_t>(), e = (*off)[1].get<uint64_t>();
  if (b > e || e > buffer_size) {
    return fail(what + " data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                    ") lie outside the data buffer of " + std::to_string(buffer_size) + " bytes", name);
  }
  if (e - b != *bytes) {
    return fail(what + " spans " + std::to_string(e - b) + " bytes but its dtype " + t->dtype_text + " and shape imply " +
                    std::to_string(*bytes), name);
  }
  *begin = b;
  t->data = buffer.subspan(b, e - b);
  return Status::ok();
}

}  // namespace

const char* st_dtype_name(StDType t) {
  for (const auto& e : kDTypes) {
    if (e.t == t) return e.text;
  }
  return "other";
}

Expected<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  const std::span<const uint8_t> bytes = file.bytes();
  POCKET_ASSIGN_OR_RETURN(SafetensorsFile f, parse(bytes, path));
  f.file_ = std::move(file);  // spans stay valid: the mapping does not move
  return f;
}

Expected<SafetensorsFile> SafetensorsFile::parse(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.empty()) return fail("the file is empty", name);
  if (bytes.size() < 8) return fail("file truncated in the header length (" + std::to_string(bytes.size()) + " bytes)", name);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > kSafetensorsMaxHeader) {
    return fail("header length " + std::to_string(header_len) + " exceeds the format's limit of 100 MB", name);
  }
  if (header_len < 2) return fail("header length " + std::to_string(header_len) + " cannot hold a JSON object", name);
  if (header_len > bytes.size() - 8) {
    return fail("file truncated in the header: it claims " + std::to_string(header_len) + " bytes, the file has " +
                    std::to_string(bytes.size() - 8) + " after the length", name);
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
  if (text.front() != '{') return fail("header does not start with '{'", name);
  POCKET_ASSIGN_OR_RETURN(json j, parse_header(text, name));
  const std::span<const uint8_t> buffer = bytes.subspan(8 + header_len);

  SafetensorsFile f;
  f.name_ = name;
  if (j.size() > kSafetensorsMaxTensors) return fail("header lists " + std::to_string(j.size()) + " tensors", name);
  std::vector<std::pair<uint64_t, size_t>> by_offset;  // (begin, index)
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "__metadata__") {
        if (!it->is_object()) return fail("__metadata__ is not an object", name);
        for (auto m = it->begin(); m != it->end(); ++m) {
          if (!m->is_string()) return fail("__metadata__ value '" + m.key().substr(0, 80) + "' is not a string", name);
          f.metadata_[m.key()] = m->get<std::string>();
        }
        continue;
      }
      if (it.key().empty() || it.key().size() > 1024) return fail("a tensor name is empty or longer than 1024 bytes", name);
      StTensor t;
      uint64_t begin = 0;
      POCKET_RETURN_IF_ERROR(parse_tensor(it.key(), *it, buffer, name, &t, &begin));
      by_offset.emplace_back(begin, f.tensors_.size());
      f.tensors_.push_back(std::move(t));
    }
  } catch (const std::exception& e) {  // nlohmann accessors throw on surprises; nothing escapes
    return fail(std::string("unexpected header content (") + e.what() + ")", name);
  }
  std::sort(by_offset.begin(), by_offset.end());
  uint64_t at = 0;
  for (const auto& [begin, i] : by_offset) {
    const StTensor& t = f.tensors_[i];
    if (begin < at) {
      return fail("tensor '" + t.name + "' at buffer offset " + std::to_string(begin) +
                      " overlaps the tensor before it (which ends at " + std::to_string(at) + ")", name);
    }
    if (begin > at) {
      return fail("a hole of " + std::to_string(begin - at) + " bytes precedes tensor '" + t.name + "' at buffer offset " +
                      std::to_string(begin), name);
    }
    at = begin + t.data.size();
  }
  if (at != buffer.size()) {
    return fail("the tensors cover " + std::to_string(at) + " bytes of a " + std::to_string(buffer.size()) +
                    "-byte data buffer (trailing or missing data)", name);
  }
  for (size_t i = 0; i < f.tensors_.size(); ++i) f.by_name_.emplace(f.tensors_[i].name, i);
  return f;
}

const StTensor* SafetensorsFile::find(std::string_view n) const {
  auto it = by_name_.find(std::string(n));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

void st_read_f32(const StTensor& t, uint64_t first, uint64_t n, float* out) {
  const uint8_t* p = t.data.data();
  switch (t.dtype) {
    case StDType::kF32:
      std::memcpy(out, p + first * 4, n * 4);
      break;
    case StDType::kF16:
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + (first + i) * 2, 2);
        out[i] = f16_to_f32(h);
      }
      break;
    case StDType::kBF16:
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + (first + i) * 2, 2);
        out[i] = bf16_to_f32(h);
      }
      break;
    default:
      std::memset(out, 0, n * 4);  // callers check the dtype first; never reached with valid input
      break;
  }
}

}  // namespace pocket
