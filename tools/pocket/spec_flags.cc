// Refusals of --spec / --model-draft combinations (spec_flags.h).
#include "spec_flags.h"

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

}  // namespace pocket::cli
