// GGUF v3 writer; see gguf_writer.h.
#include "convert/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "convert/gguf_reader.h"
#include "core/checked_math.h"

namespace pocket {
namespace {

template <typename T>
void put(std::vector<uint8_t>* out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}

void put_string(std::vector<uint8_t>* out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out->insert(out->end(), s.begin(), s.end());
}

}  // namespace

void GgufWriter::begin_kv(std::string_view key, uint32_t type) {
  put_string(&kv_, key);
  put<uint32_t>(&kv_, type);
  ++n_kv_;
}

void GgufWriter::add_u32(std::string_view key, uint32_t v) { begin_kv(key, 4); put(&kv_, v); }
void GgufWriter::add_i32(std::string_view key, int32_t v) { begin_kv(key, 5); put(&kv_, v); }
void GgufWriter::add_f32(std::string_view key, float v) { begin_kv(key, 6); put(&kv_, v); }
void GgufWriter::add_bool(std::string_view key, bool v) { begin_kv(key, 7); put<uint8_t>(&kv_, v ? 1 : 0); }
void GgufWriter::add_string(std::string_view key, std::string_view v) { begin_kv(key, 8); put_string(&kv_, v); }

void GgufWriter::add_string_array(std::string_view key, const std::vector<std::string>& v) {
  begin_kv(key, 9);
  put<uint32_t>(&kv_, 8);
  put<uint64_t>(&kv_, v.size());
  for (const auto& s : v) put_string(&kv_, s);
}

void GgufWriter::add_f32_array(std::string_view key, const std::vector<float>& v) {
  begin_kv(key, 9);
  put<uint32_t>(&kv_, 6);
  put<uint64_t>(&kv_, v.size());
  for (float x : v) put(&kv_, x);
}

void GgufWriter::add_i32_array(std::string_view key, const std::vector<int32_t>& v) {
  begin_kv(key, 9);
  put<uint32_t>(&kv_, 5);
  put<uint64_t>(&kv_, v.size());
  for (int32_t x : v) put(&kv_, x);
}

Status GgufWriter::add_tensor(std::string name, std::vector<uint64_t> dims, uint32_t type, FillFn fill) {
  uint64_t bb = 0, be = 0;
  const char* tname = nullptr;
  if (!ggml_type_size(type, &bb, &be, &tname)) return invalid_argument("[gguf] unknown ggml type " + std::to_string(type));
  if (dims.empty() || dims.size() > kGgufMaxDims || dims[0] % be != 0) {
    return invalid_argument("[gguf] tensor '" + name + "': its row is not a whole number of " + tname + " blocks");
  }
  const auto n = checked_product(dims);
  const auto size = n ? checked_mul(*n / be, bb) : std::nullopt;
  if (!size) return invalid_argument("[gguf] tensor '" + name + "' is too large");
  tensors_.push_back({std::move(name), std::move(dims), type, *size, std::move(fill)});
  return Status::ok();
}

Status GgufWriter::emit(const std::function<Status(std::span<const uint8_t>)>& sink) const {
  std::vector<uint8_t> head;
  head.insert(head.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(&head, 3);
  put<uint64_t>(&head, tensors_.size());
  put<uint64_t>(&head, n_kv_);
  head.insert(head.end(), kv_.begin(), kv_.end());
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(&head, t.name);
    put<uint32_t>(&head, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) put(&head, d);
    put(&head, t.type);
    put(&head, offset);
    offset = align_up(offset + t.size, kAlignment);
  }
  head.resize(align_up(head.size(), kAlignment), 0);
  POCKET_RETURN_IF_ERROR(sink(head));
  std::vector<uint8_t> buf;
  for (const Tensor& t : tensors_) {
    buf.assign(align_up(t.size, kAlignment), 0);
    POCKET_RETURN_IF_ERROR(t.fill(std::span<uint8_t>(buf.data(), t.size)));
    POCKET_RETURN_IF_ERROR(sink(buf));
  }
  return Status::ok();
}

Status GgufWriter::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return io_error("[gguf] cannot create " + tmp);
  Status st = emit([&](std::span<const uint8_t> b) {
    if (std::fwrite(b.data(), 1, b.size(), f) != b.size()) return io_error("[gguf] write failed: " + tmp);
    return Status::ok();
  });
  if (std::fclose(f) != 0 && st.is_ok()) st = io_error("[gguf] write failed: " + tmp);
  std::error_code ec;
  if (!st.is_ok()) {
    std::filesystem::remove(tmp, ec);
    return st;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return io_error("[gguf] cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::ok();
}

Expected<std::vector<uint8_t>> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  POCKET_RETURN_IF_ERROR(emit([&](std::span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return Status::ok();
  }));
  return out;
}

}  // namespace pocket
