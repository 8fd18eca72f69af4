// The --spec / --model-draft (-md) / --draft-max flags that run, bench and serve share: their help text and
// the combinations refused before anything is loaded.
#pragma once

#include <string>

#include "core/status.h"
#include "speculative/speculative_session.h"

namespace pocket::cli {

inline constexpr const char* kSpecHelp =
    "Speculative decoding: none, ngram (prompt lookup), draft (a draft model, -md) or block (a block drafter "
    "package trained for this model, -md)";
inline constexpr const char* kModelDraftHelp =
    "--spec draft: a draft model with the same tokenizer; --spec block: the block drafter package (also -md)";

// "[cmd] --spec block needs ..." for a method without its package, or a package given to a method that
// takes none (ngram, none).
Status check_spec_flags(const char* cmd, const std::string& spec, const std::string& draft_model);

// The "speculative (METHOD, k <= K): ... target passes, ... tokens per pass, ..." line on stderr (run, task).
void print_spec_stats(const std::string& method, int draft_max, const SpecStats& s);

}  // namespace pocket::cli
