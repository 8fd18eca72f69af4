// GGUF v2/v3 reader; format and guarantees in gguf_reader.h.
#include "convert/gguf_reader.h"

#include <algorithm>
#include <cstring>

#include "core/checked_math.h"
#include "format/byte_reader.h"

namespace pocket {
namespace {

uint64_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    default: return 0;
  }
}

class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, const std::string& name) : bytes_(bytes), r_(bytes), name_(name) {}

  Status fail(const std::string& what) const {
    return corrupt_file("[gguf] " + what + " (at byte " + std::to_string(r_.position()) + "): " + name_);
  }
  Status truncated(const std::string& where) const { return fail("file truncated in " + where); }

  template <typename T>
  Status read(T* v, const std::string& where) {
    return r_.read(v) ? Status::ok() : truncated(where);
  }

  Status read_string(std::string_view* s, const std::string& where) {
    uint64_t len = 0;
    POCKET_RETURN_IF_ERROR(read(&len, where));
    if (len > kGgufMaxStringBytes) return fail(where + " claims a string of " + std::to_string(len) + " bytes");
    if (!r_.read_string(len, s)) return truncated(where);
    return Status::ok();
  }

  Status read_value(GgufType type, GgufValue* v, const std::string& where) {
    v->type = type;
    const uint64_t start = r_.position();
    if (type == GgufType::kString) {
      POCKET_RETURN_IF_ERROR(read_string(&v->str, where));
    } else if (type == GgufType::kArray) {
      uint32_t et = 0;
      POCKET_RETURN_IF_ERROR(read(&et, where));
      POCKET_RETURN_IF_ERROR(read(&v->count, where));
      v->elem_type = static_cast<GgufType>(et);
      if (v->elem_type == GgufType::kArray) return unsupported("[gguf] " + where + " is an array of arrays: " + name_);
      if (v->elem_type == GgufType::kString) {
        // Each string needs at least its 8-byte length: bound the count before walking it.
        if (v->count > r_.remaining() / 8) {
          return fail(where + " claims " + std::to_string(v->count) + " strings, more than the file can hold");
        }
        for (uint64_t i = 0; i < v->count; ++i) {
          std::string_view s;
          POCKET_RETURN_IF_ERROR(read_string(&s, where + "[" + std::to_string(i) + "]"));
        }
      } else {
        const uint64_t es = scalar_size(v->elem_type);
        if (es == 0) return fail(where + " has unknown element type " + std::to_string(et));
        const auto total = checked_mul(v->count, es);
        if (!total || *total > r_.remaining()) {
          return fail(where + " claims " + std::to_string(v->count) + " elements, more than the file can hold");
        }
        std::span<const uint8_t> skip;
        (void)r_.read_bytes(*total, &skip);
      }
    } else {
      const uint64_t n = scalar_size(type);
      if (n == 0) return fail(where + " has unknown type " + std::to_string(static_cast<uint32_t>(type)));
      uint8_t buf[8] = {};
      std::span<const uint8_t> b;
      if (!r_.read_bytes(n, &b)) return truncated(where);
      std::memcpy(buf, b.data(), n);
      switch (type) {
        case GgufType::kU8: case GgufType::kBool: v->scalar.u = buf[0]; break;
        case GgufType::kI8: v->scalar.i = static_cast<int8_t>(buf[0]); break;
        case GgufType::kU16: { uint16_t x; std::memcpy(&x, buf, 2); v->scalar.u = x; break; }
        case GgufType::kI16: { int16_t x; std::memcpy(&x, buf, 2); v->scalar.i = x; break; }
        case GgufType::kU32: { uint32_t x; std::memcpy(&x, buf, 4); v->scalar.u = x; break; }
        case GgufType::kI32: { int32_t x; std::memcpy(&x, buf, 4); v->scalar.i = x; break; }
        case GgufType::kF32: { float x; std::memcpy(&x, buf, 4); v->scalar.f = x; break; }
        case GgufType::kU64: std::memcpy(&v->scalar.u, buf, 8); break;
        case GgufType::kI64: std::memcpy(&v->scalar.i, buf, 8); break;
        case GgufType::kF64: std::memcpy(&v->scalar.f, buf, 8); break;
        default: break;
      }
    }
    v->raw = bytes_.subspan(start, r_.position() - start);
    return Status::ok();
  }

  ByteReader& reader() { return r_; }

 private:
  std::span<const uint8_t> bytes_;
  ByteReader r_;
  const std::string& name_;
};

}  // namespace

const char* gguf_type_name(GgufType t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kU16: case GgufType::kI16: case GgufType::kU32:
    case GgufType::kI32: case GgufType::kU64: case GgufType::kI64: case GgufType::kBool: return true;
    default: return false;
  }
}

bool GgufValue::as_int(int64_t* out) const {
  switch (type) {
    case GgufType::kI8: case GgufType::kI16: case GgufType::kI32: case GgufType::kI64: *out = scalar.i; return true;
    case GgufType::kU8: case GgufType::kU16: case GgufType::kU32: case GgufType::kBool: *out = static_cast<int64_t>(scalar.u); return true;
    case GgufType::kU64:
      if (scalar.u > static_cast<uint64_t>(INT64_MAX)) return false;
      *out = static_cast<int64_t>(scalar.u);
      return true;
    default: return false;
  }
}

bool ggml_type_size(uint32_t type, uint64_t* block_bytes, uint64_t* block_elems, const char** name) {
  struct T { uint32_t id; const char* name; uint64_t elems, bytes; };
  static const T kTypes[] = {
      {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
      {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
      {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
      {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
      {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
      {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
      {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
      {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},
  };
  for (const T& t : kTypes) {
    if (t.id == type) {
      *block_bytes = t.bytes;
      *block_elems = t.elems;
      if (name) *name = t.name;
      return true;
    }
  }
  return false;
}

Expected<GgufFile> GgufFile::open(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  const std::span<const uint8_t> bytes = file.bytes();
  POCKET_ASSIGN_OR_RETURN(GgufFile g, parse(bytes, path));
  g.file_ = std::move(file);  // the views stay valid: the mapping does not move
  return g;
}

Expected<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes, const std::string& name) {
  GgufFile g;
  g.bytes_ = bytes;
  g.name_ = name;
  Parser p(bytes, g.name_);
  if (bytes.empty()) return corrupt_file("[gguf] the file is empty: " + name);
  uint8_t magic[4];
  for (uint8_t& m : magic) POCKET_RETURN_IF_ERROR(p.read(&m, "the magic"));
  if (std::memcmp(magic, "GGUF", 4) != 0) return corrupt_file("[gguf] wrong magic (not a GGUF file): " + name);
  POCKET_RETURN_IF_ERROR(p.read(&g.version_, "the header"));
  if (g.version_ != 2 && g.version_ != 3) {
    return unsupported("[gguf] version " + std::to_string(g.version_) + " (this reader handles 2 and 3): " + name);
  }
  uint64_t n_tensors = 0, n_kv = 0;
  POCKET_RETURN_IF_ERROR(p.read(&n_tensors, "the header"));
  POCKET_RETURN_IF_ERROR(p.read(&n_kv, "the header"));
  // Each key/value takes at least 8 (key length) + 4 (type) + 1 bytes; each tensor info at least 8+4+8+4+8.
  if (n_kv > kGgufMaxKv || n_kv > p.reader().remaining() / 13) {
    return p.fail("header claims " + std::to_string(n_kv) + " metadata entries, more than the limit or the file");
  }
  if (n_tensors > kGgufMaxTensors || n_tensors > p.reader().remaining() / 32) {
    return p.fail("header claims " + std::to_string(n_tensors) + " tensors, more than the limit or the file");
  }
  g.keys_.reserve(n_kv);
  g.kv_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string where = "metadata entry " + std::to_string(i);
    std::string_view key;
    POCKET_RETURN_IF_ERROR(p.read_string(&key, where + " key"));
    uint32_t type = 0;
    POCKET_RETURN_IF_ERROR(p.read(&type, where));
    GgufValue v;
    POCKET_RETURN_IF_ERROR(p.read_value(static_cast<GgufType>(type), &v, "'" + std::string(key) + "'"));
    if (!g.kv_.emplace(key, v).second) return p.fail("duplicate metadata key '" + std::string(key) + "'");
    g.keys_.push_back(key);
  }
  if (const GgufValue* a = g.find("general.alignment")) {
    int64_t al = 0;
    if (!a->as_int(&al) || al <= 0 || al > (1 << 20) || (al & (al - 1)) != 0) {
      return corrupt_file("[gguf] general.alignment is not a power of two up to 1 MiB: " + name);
    }
    g.alignment_ = static_cast<uint64_t>(al);
  }
  g.tensors_.resize(n_tensors);
  std::unordered_map<std::string_view, uint64_t> names;
  names.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo& t = g.tensors_[i];
    const std::string where = "tensor info " + std::to_string(i);
    POCKET_RETURN_IF_ERROR(p.read_string(&t.name, where));
    if (!names.emplace(t.name, i).second) return p.fail("duplicate tensor name '" + std::string(t.name) + "'");
    uint32_t n_dims = 0;
    POCKET_RETURN_IF_ERROR(p.read(&n_dims, where));
    if (n_dims == 0 || n_dims > kGgufMaxDims) {
      return p.fail("tensor '" + std::string(t.name) + "' has " + std::to_string(n_dims) + " dimensions (1.." +
                    std::to_string(kGgufMaxDims) + ")");
    }
    t.dims.resize(n_dims);
    for (uint64_t& d : t.dims) {
      POCKET_RETURN_IF_ERROR(p.read(&d, where));
      if (d == 0 || d > (uint64_t{1} << 40)) {
        return p.fail("tensor '" + std::string(t.name) + "' has dimension " + std::to_string(d));
      }
    }
    POCKET_RETURN_IF_ERROR(p.read(&t.ggml_type, where));
    POCKET_RETURN_IF_ERROR(p.read(&t.offset, where));
    uint64_t bb = 0, be = 0;
    if (!ggml_type_size(t.ggml_type, &bb, &be, nullptr)) {
      return unsupported("[gguf] tensor '" + std::string(t.name) + "' has unknown ggml type " +
                         std::to_string(t.ggml_type) + ": " + name);
    }
    const auto n_el = checked_product(t.dims);
    if (!n_el) return p.fail("tensor '" + std::string(t.name) + "' has a shape whose size overflows");
    if (t.dims[0] % be != 0) {
      return p.fail("tensor '" + std::string(t.name) + "' row of " + std::to_string(t.dims[0]) +
                    " is not a multiple of its block of " + std::to_string(be));
    }
    const auto nb = checked_mul(*n_el / be, bb);
    if (!nb) return p.fail("tensor '" + std::string(t.name) + "' byte size overflows");
    t.n_bytes = *nb;
    if (t.offset % g.alignment_ != 0) {
      return p.fail("tensor '" + std::string(t.name) + "' offset " + std::to_string(t.offset) +
                    " is not a multiple of the alignment " + std::to_string(g.alignment_));
    }
  }
  g.data_offset_ = align_up(p.reader().position(), g.alignment_);
  if (n_tensors > 0) {
    std::vector<const GgufTensorInfo*> by_offset;
    for (const auto& t : g.tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t i = 0; i < by_offset.size(); ++i) {
      const GgufTensorInfo& t = *by_offset[i];
      const auto begin = checked_add(g.data_offset_, t.offset);
      if (!begin || !range_within(*begin, t.n_bytes, bytes.size())) {
        return corrupt_file("[gguf] tensor '" + std::string(t.name) + "' (" + std::to_string(t.n_bytes) +
                            " bytes at data offset " + std::to_string(t.offset) + ") runs past the end of the file (" +
                            std::to_string(bytes.size()) + " bytes): " + name);
      }
      if (i + 1 < by_offset.size() && t.offset + t.n_bytes > by_offset[i + 1]->offset) {
        return corrupt_file("[gguf] tensors '" + std::string(t.name) + "' and '" + std::string(by_offset[i + 1]->name) +
                            "' overlap: " + name);
      }
    }
  }
  return g;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

namespace {
Status wrong_type(const GgufFile& g, std::string_view key, const GgufValue* v, const char* want) {
  if (v == nullptr) return corrupt_file("[gguf] missing key '" + std::string(key) + "': " + g.name());
  std::string have = gguf_type_name(v->type);
  if (v->type == GgufType::kArray) have += std::string(" of ") + gguf_type_name(v->elem_type);
  return corrupt_file("[gguf] key '" + std::string(key) + "' is " + have + ", expected " + want + ": " + g.name());
}
}  // namespace

Expected<std::string_view> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kString) return wrong_type(*this, key, v, "string");
  return v->str;
}

Expected<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  int64_t out;
  if (!v || !v->as_int(&out)) return wrong_type(*this, key, v, "an integer");
  return out;
}

Expected<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kBool) return wrong_type(*this, key, v, "bool");
  return v->scalar.u != 0;
}

Expected<std::vector<std::string_view>> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kArray || v->elem_type != GgufType::kString) {
    return wrong_type(*this, key, v, "array of string");
  }
  std::vector<std::string_view> out;
  out.reserve(v->count);  // bounded at parse time by the bytes the array occupies
  ByteReader r(v->raw.subspan(12));
  for (uint64_t i = 0; i < v->count; ++i) {
    uint64_t len = 0;
    std::string_view s;
    (void)r.read(&len);
    (void)r.read_string(len, &s);  // validated at parse time
    out.push_back(s);
  }
  return out;
}

Expected<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kArray || v->elem_type != GgufType::kF32) return wrong_type(*this, key, v, "array of f32");
  std::vector<float> out(v->count);
  if (v->count > 0) std::memcpy(out.data(), v->raw.data() + 12, v->count * 4);  // data() is null when empty
  return out;
}

Expected<std::vector<int32_t>> GgufFile::get_i32_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kArray || (v->elem_type != GgufType::kI32 && v->elem_type != GgufType::kU32)) {
    return wrong_type(*this, key, v, "array of i32");
  }
  std::vector<int32_t> out(v->count);
  if (v->count > 0) std::memcpy(out.data(), v->raw.data() + 12, v->count * 4);  // data() is null when empty
  return out;
}

}  // namespace pocket
