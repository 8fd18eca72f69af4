// Registration of the `pocket` subcommands; each lives in its own cmd_<name>.cc.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "core/status.h"

namespace pocket::cli {

void register_run(CLI::App& app);
void register_convert(CLI::App& app);
void register_inspect(CLI::App& app);
void register_verify(CLI::App& app);
void register_synth(CLI::App& app);
void register_plan(CLI::App& app);
void register_bench(CLI::App& app);
void register_quantize(CLI::App& app);
void register_perplexity(CLI::App& app);
void register_kl(CLI::App& app);
void register_imatrix(CLI::App& app);
void register_serve(CLI::App& app);  // cmd_serve.cc
void register_task(CLI::App& app);  // cmd_task.cc

// Prints a failed Status to stderr as "pocket <cmd>: <error>" and returns the process exit code (1).
int report(const char* cmd, const Status& st);
// "12.34 MiB"
std::string format_bytes(uint64_t bytes);

}  // namespace pocket::cli

// The tokenizer inspection command lives in the tokenizer component's namespace.
namespace pocket {
void register_tokenize(CLI::App& app);  // cmd_tokenize.cc
}
