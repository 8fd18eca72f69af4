// Reading and writing .imatrix files (format in importance.h); every count is bounded before use.
#include "quant/importance.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace pocket::quant {
namespace {

constexpr char kMagic[8] = {'P', 'K', 'I', 'M', 'T', 'X', 0, 0};

Status check_entry(const std::string& name, const std::vector<float>& v, const std::string& what) {
  if (name.empty() || name.size() > kImportanceMaxName) {
    return corrupt_file("[imatrix] tensor name of " + std::to_string(name.size()) + " bytes, expected 1.." +
                        std::to_string(kImportanceMaxName) + ": " + what);
  }
  if (v.empty() || v.size() > kImportanceMaxCols) {
    return corrupt_file("[imatrix] '" + name + "' has " + std::to_string(v.size()) + " columns, expected 1.." +
                        std::to_string(kImportanceMaxCols) + ": " + what);
  }
  for (size_t k = 0; k < v.size(); ++k) {
    if (!std::isfinite(v[k]) || v[k] < 0.0f) {
      return corrupt_file("[imatrix] '" + name + "' column " + std::to_string(k) + " is " + std::to_string(v[k]) +
                          ", expected a finite value >= 0: " + what);
    }
  }
  return Status::ok();
}

struct Cursor {
  const uint8_t* p;
  uint64_t left;
  bool take(void* out, uint64_t n) {
    if (n > left) return false;
    std::memcpy(out, p, n);
    p += n;
    left -= n;
    return true;
  }
};

}  // namespace

Status write_importance(const std::string& path, const ImportanceMap& m) {
  if (m.columns.empty() || m.columns.size() > kImportanceMaxEntries) {
    return invalid_argument("[imatrix] " + std::to_string(m.columns.size()) + " entries, expected 1.." +
                            std::to_string(kImportanceMaxEntries) + ": " + path);
  }
  if (m.n_tokens == 0) return invalid_argument("[imatrix] statistics over 0 tokens: " + path);
  std::vector<uint8_t> buf;
  auto put = [&buf](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf.insert(buf.end(), b, b + n);
  };
  put(kMagic, 8);
  const uint32_t version = kImportanceVersion, n = static_cast<uint32_t>(m.columns.size());
  put(&version, 4);
  put(&n, 4);
  put(&m.n_tokens, 8);
  for (const auto& [name, v] : m.columns) {
    POCKET_RETURN_IF_ERROR(check_entry(name, v, path));
    const uint32_t len = static_cast<uint32_t>(name.size()), cols = static_cast<uint32_t>(v.size());
    put(&len, 4);
    put(name.data(), name.size());
    put(&cols, 4);
    put(v.data(), v.size() * 4);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return io_error("[imatrix] cannot create '" + path + "'");
  out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
  if (!out) return io_error("[imatrix] write failed: " + path);
  return Status::ok();
}

Expected<ImportanceMap> parse_importance(const uint8_t* data, uint64_t size, const std::string& what) {
  Cursor c{data, size};
  char magic[8];
  if (!c.take(magic, 8)) return corrupt_file("[imatrix] file of " + std::to_string(size) + " bytes is too short for the header: " + what);
  if (std::memcmp(magic, kMagic, 8) != 0) return corrupt_file("[imatrix] not an .imatrix file (bad magic): " + what);
  uint32_t version = 0, n = 0;
  ImportanceMap m;
  if (!c.take(&version, 4) || !c.take(&n, 4) || !c.take(&m.n_tokens, 8)) {
    return corrupt_file("[imatrix] header truncated: " + what);
  }
  if (version != kImportanceVersion) {
    return corrupt_file("[imatrix] version " + std::to_string(version) + ", this build reads version " +
                        std::to_string(kImportanceVersion) + ": " + what);
  }
  if (n == 0 || n > kImportanceMaxEntries) {
    return corrupt_file("[imatrix] " + std::to_string(n) + " entries, expected 1.." + std::to_string(kImportanceMaxEntries) +
                        ": " + what);
  }
  if (m.n_tokens == 0) return corrupt_file("[imatrix] statistics over 0 tokens: " + what);
  for (uint32_t e = 0; e < n; ++e) {
    const std::string at = "entry " + std::to_string(e) + " of " + std::to_string(n);
    uint32_t len = 0, cols = 0;
    if (!c.take(&len, 4)) return corrupt_file("[imatrix] " + at + " truncated in its name length: " + what);
    if (len == 0 || len > kImportanceMaxName) {
      return corrupt_file("[imatrix] " + at + " has a name of " + std::to_string(len) + " bytes, expected 1.." +
                          std::to_string(kImportanceMaxName) + ": " + what);
    }
    std::string name(len, '\0');
    if (!c.take(name.data(), len)) return corrupt_file("[imatrix] " + at + " truncated in its name: " + what);
    if (!c.take(&cols, 4)) return corrupt_file("[imatrix] '" + name + "' truncated in its column count: " + what);
    if (cols == 0 || cols > kImportanceMaxCols) {
      return corrupt_file("[imatrix] '" + name + "' has " + std::to_string(cols) + " columns, expected 1.." +
                          std::to_string(kImportanceMaxCols) + ": " + what);
    }
    if (static_cast<uint64_t>(cols) * 4 > c.left) {  // checked before allocating
      return corrupt_file("[imatrix] '" + name + "' needs " + std::to_string(static_cast<uint64_t>(cols) * 4) +
                          " bytes of values, " + std::to_string(c.left) + " remain: " + what);
    }
    std::vector<float> v(cols);
    (void)c.take(v.data(), static_cast<uint64_t>(cols) * 4);
    POCKET_RETURN_IF_ERROR(check_entry(name, v, what));
    if (!m.columns.emplace(name, std::move(v)).second) {
      return corrupt_file("[imatrix] tensor '" + name + "' appears twice: " + what);
    }
  }
  if (c.left != 0) return corrupt_file("[imatrix] " + std::to_string(c.left) + " trailing bytes after the last entry: " + what);
  return m;
}

Expected<ImportanceMap> read_importance(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("[imatrix] cannot read '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_importance(bytes.data(), bytes.size(), path);
}

}  // namespace pocket::quant
