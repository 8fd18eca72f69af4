// Checkpoint metadata, atomic commit and lookup (see checkpoint.h).
#include "run/checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace pocket::train {

namespace fs = std::filesystem;

std::string checkpoint_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "ckpt-%07lld", static_cast<long long>(step));
  return buf;
}

Expected<std::vector<uint8_t>> read_binary_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("[train] cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Status write_binary_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) return io_error("[train] cannot write " + path);
  return Status::ok();
}

Status write_checkpoint_meta(const std::string& dir, const CheckpointMeta& m) {
  nlohmann::json j = {{"step", m.step},
                      {"loader_epoch", m.loader.epoch},
                      {"loader_next_row", m.loader.next_row},
                      {"tokens", m.tokens},
                      {"elapsed_s", m.elapsed_s},
                      {"config", nlohmann::json::parse(m.config.to_json())},
                      {"hparams", nlohmann::json::parse(m.hparams.to_json())}};
  std::ofstream out(dir + "/meta.json");
  out << j.dump(1) << "\n";
  if (!out) return io_error("[train] cannot write " + dir + "/meta.json");
  return Status::ok();
}

Expected<CheckpointMeta> read_checkpoint_meta(const std::string& dir) {
  std::ifstream in(dir + "/meta.json");
  if (!in) return io_error("[train] no checkpoint metadata at " + dir + "/meta.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j.contains("hparams") || !j.contains("config")) {
    return corrupt_file("[train] checkpoint metadata is malformed: " + dir + "/meta.json");
  }
  CheckpointMeta m;
  m.step = j.value("step", int64_t{0});
  m.loader.epoch = j.value("loader_epoch", uint64_t{0});
  m.loader.next_row = j.value("loader_next_row", uint64_t{0});
  m.tokens = j.value("tokens", int64_t{0});
  m.elapsed_s = j.value("elapsed_s", 0.0);
  POCKET_ASSIGN_OR_RETURN(m.config, TrainConfig::from_json(j["config"].dump()));
  POCKET_ASSIGN_OR_RETURN(m.hparams, HParams::from_json(j["hparams"].dump()));
  return m;
}

Status commit_checkpoint(const std::string& run_dir, const std::string& tmp_dir, int64_t step, int keep) {
  const std::string name = checkpoint_name(step);
  const fs::path final_dir = fs::path(run_dir) / name;
  std::error_code ec;
  fs::remove_all(final_dir, ec);
  fs::rename(tmp_dir, final_dir, ec);
  if (ec) return io_error("[train] cannot rename " + tmp_dir + " to " + final_dir.string() + ": " + ec.message());
  const std::string latest = run_dir + "/latest", latest_tmp = latest + ".tmp";
  {
    std::ofstream out(latest_tmp);
    out << name << "\n";
    if (!out) return io_error("[train] cannot write " + latest_tmp);
  }
  fs::rename(latest_tmp, latest, ec);
  if (ec) return io_error("[train] cannot update " + latest + ": " + ec.message());
  std::vector<std::string> all;
  for (const auto& e : fs::directory_iterator(run_dir, ec)) {
    const std::string n = e.path().filename().string();
    if (e.is_directory() && n.rfind("ckpt-", 0) == 0 && n.find(".tmp") == std::string::npos) all.push_back(n);
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i + keep < all.size(); ++i) fs::remove_all(fs::path(run_dir) / all[i], ec);
  return Status::ok();
}

bool has_checkpoint(const std::string& run_dir) { return fs::exists(fs::path(run_dir) / "latest"); }

Expected<std::string> resolve_checkpoint(const std::string& path) {
  if (fs::exists(fs::path(path) / "meta.json")) return path;
  std::ifstream in(path + "/latest");
  std::string name;
  if (!(in >> name)) return io_error("[train] " + path + " is neither a checkpoint nor a run directory with 'latest'");
  const std::string dir = (fs::path(path) / name).string();
  if (!fs::exists(fs::path(dir) / "meta.json")) return corrupt_file("[train] 'latest' names a missing checkpoint: " + dir);
  return dir;
}

}  // namespace pocket::train
