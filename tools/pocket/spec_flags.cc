// Refusals of --spec / --model-draft combinations (spec_flags.h).
#include "spec_flags.h"

#include <cstdio>

namespace pocket::cli {

Status check_spec_flags(const char* cmd, const std::string& spec, const std::string& draft_model) {
  const std::string where = std::string("[") + cmd + "] ";
  if (spec == "block" && draft_model.empty()) {
    return invalid_argument(where + "--spec block needs the block drafter package trained for this model: "
                                    "--model-draft DRAFTER.pocket (-md)");
  }
  if (spec == "draft" && draft_model.empty()) {
    return invalid_argument(where + "--spec draft needs a draft model with the same tokenizer: "
                                    "--model-draft DRAFT.pocket (-md)");
  }
  if (spec != "block" && spec != "draft" && !draft_model.empty()) {
    return invalid_argument(where + "--model-draft '" + draft_model + "' is used by --spec draft (a draft model) or "
                                    "--spec block (a block drafter), not --spec " + spec);
  }
  return Status::ok();
}

void print_spec_stats(const std::string& method, int draft_max, const SpecStats& s) {
  std::fprintf(stderr, "speculative (%s, k <= %d): %lld target passes, %.2f tokens per pass, %lld of %lld drafted "
               "tokens accepted (%.1f%%); %lld passes plain (speculation measured slower)\n", method.c_str(),
               draft_max, static_cast<long long>(s.n_passes), s.tokens_per_pass(),
               static_cast<long long>(s.n_accepted), static_cast<long long>(s.n_drafted), 100.0 * s.acceptance_rate(),
               static_cast<long long>(s.n_plain));
}

}  // namespace pocket::cli
