// Reading and writing the drafter data file (layout in drafter_data.h).
#include "data/drafter_data.h"

#include <cstring>
#include <fstream>

namespace pocket::train {

namespace {

constexpr char kMagic[4] = {'P', 'K', 'D', 'D'};
constexpr uint32_t kVersion = 1;

template <typename T>
void put(std::ofstream& out, T v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
bool get(std::ifstream& in, T* v) {
  return static_cast<bool>(in.read(reinterpret_cast<char*>(v), sizeof *v));
}

}  // namespace

Status write_drafter_data(const std::string& path, const std::vector<DrafterSequence>& seqs) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return io_error("[drafter-data] cannot write " + tmp);
    out.write(kMagic, 4);
    put<uint32_t>(out, kVersion);
    put<uint64_t>(out, seqs.size());
    for (const auto& s : seqs) {
      put<uint8_t>(out, static_cast<uint8_t>(s.task));
      put<uint8_t>(out, static_cast<uint8_t>(s.lang));
      put<uint16_t>(out, 0);
      put<uint32_t>(out, static_cast<uint32_t>(s.n_prompt));
      put<uint32_t>(out, static_cast<uint32_t>(s.n_generated()));
      out.write(reinterpret_cast<const char*>(s.ids.data()), static_cast<std::streamsize>(s.ids.size() * 4));
    }
    out.flush();
    if (!out) return io_error("[drafter-data] write failed: " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return io_error("[drafter-data] cannot rename " + tmp + " to " + path);
  return Status::ok();
}

Expected<std::vector<DrafterSequence>> read_drafter_data(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("[drafter-data] cannot read " + path);
  char magic[4];
  uint32_t version = 0;
  uint64_t n = 0;
  if (!in.read(magic, 4) || std::memcmp(magic, kMagic, 4) != 0 || !get(in, &version) || version != kVersion ||
      !get(in, &n)) {
    return corrupt_file("[drafter-data] not a drafter data file (magic PKDD, version 1): " + path);
  }
  std::vector<DrafterSequence> out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(n, 1u << 24)));
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t task = 0, lang = 0;
    uint16_t pad = 0;
    uint32_t n_prompt = 0, n_gen = 0;
    if (!get(in, &task) || !get(in, &lang) || !get(in, &pad) || !get(in, &n_prompt) || !get(in, &n_gen)) {
      return corrupt_file("[drafter-data] sequence " + std::to_string(i) + " of " + std::to_string(n) +
                          " is truncated: " + path);
    }
    if (task > static_cast<uint8_t>(TaskKind::kRoute) || lang > static_cast<uint8_t>(Lang::kZh) ||
        n_prompt + static_cast<uint64_t>(n_gen) > (1u << 20)) {
      return corrupt_file("[drafter-data] sequence " + std::to_string(i) + " has a bad header: " + path);
    }
    DrafterSequence s;
    s.task = static_cast<TaskKind>(task);
    s.lang = static_cast<Lang>(lang);
    s.n_prompt = static_cast<int32_t>(n_prompt);
    s.ids.resize(n_prompt + n_gen);
    if (!in.read(reinterpret_cast<char*>(s.ids.data()), static_cast<std::streamsize>(s.ids.size() * 4))) {
      return corrupt_file("[drafter-data] sequence " + std::to_string(i) + " is truncated: " + path);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace pocket::train
