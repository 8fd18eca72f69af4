// `pocket`: the command-line front end (llama.cpp's conventions where they exist).
#include <cstdio>
#include <string_view>

#include "commands.h"

namespace pocket::cli {

int report(const char* cmd, const Status& st) {
  std::fprintf(stderr, "pocket %s: %s\n", cmd, st.to_string().c_str());
  return 1;
}

std::string format_bytes(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace pocket::cli

int main(int argc, char** argv) {
  CLI::App app{"pocket: small language models on device"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "pocket 0.1.0");
  pocket::cli::register_run(app);
  pocket::cli::register_convert(app);
  pocket::cli::register_inspect(app);
  pocket::cli::register_verify(app);
  pocket::cli::register_synth(app);
  pocket::cli::register_plan(app);
  pocket::cli::register_bench(app);
  pocket::cli::register_quantize(app);
  pocket::cli::register_perplexity(app);
  pocket::cli::register_kl(app);
  pocket::cli::register_imatrix(app);
  pocket::cli::register_serve(app);
  pocket::cli::register_task(app);
  pocket::register_tokenize(app);
  // llama.cpp spells the draft model "-md"; CLI11 takes one-letter short options only.
  static char kModelDraft[] = "--model-draft";
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "-md") argv[i] = kModelDraft;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
