// Command-line parsing shared by pocket-train's subcommands: a tiny flag reader and the flags that fill a
// TrainConfig (model shape, optimiser, schedule, cadence, data parallelism).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "run/train_config.h"

namespace pocket::train::cli {

// --name value / --flag (-o = --out, -m = --model); repeated names accumulate; bare words are positional.
class Args {
 public:
  Args(int argc, char** argv, int first);
  bool has(const std::string& name) const;
  std::string str(const std::string& name, const std::string& def = "") const;
  std::vector<std::string> all(const std::string& name) const;
  Expected<int64_t> i64(const std::string& name, int64_t def) const;
  Expected<double> f64(const std::string& name, double def) const;
  // Names given that are not in `known` (typos), as "--a, --b".
  std::string unknown(const std::vector<std::string>& known) const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
};

// Fills `cfg` from the flags (after loading --config FILE when given); returns the data-parallel placement.
Status apply_train_flags(const Args& a, TrainConfig* cfg, DistOptions* dist, int64_t* nproc);
std::vector<std::string> train_flag_names();
const char* train_flags_help();

int report(const char* cmd, const Status& st);

// --nproc N: runs this program N times with --rank/--world/--rendezvous appended (file rendezvous under
// out_dir, on loopback; ranks above 0 quiet) and returns the worst exit code.
int spawn_ranks(int argc, char** argv, int64_t nproc, const std::string& out_dir);

}  // namespace pocket::train::cli
