// A block drafter trained for a small target, widened for that target's widened copy (convert/widen.h): the
// drafter's blocks get the wide target's head layout, width and FFN width by the same construction, its fuse
// reads the wide hidden states of the mapped layers, and it names the wide package. Its drafts equal the
// small pair's wherever the logits are not near a tie (tested), so the acceptance a trained drafter earns
// can be measured at the cost of the wide shape (docs/speculative.md, "Widened target").
#pragma once

#include <string>

#include "convert/widen.h"
#include "core/status.h"

namespace pocket {

class Model;
class BlockDrafterModel;

// `drafter` must have been made for `small_target`, and `wide_target` written by write_widened_model from
// `small_target`; each is checked, with an error naming what differs.
Status write_widened_block_drafter(const Model& small_target, const BlockDrafterModel& drafter,
                                   const Model& wide_target, const WidenOptions& o, const std::string& path);

}  // namespace pocket
