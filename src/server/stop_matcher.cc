// StopMatcher: find the earliest stop string in the pending text, hold back any suffix that is a prefix
// of a stop string.
#include "server/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace pocket::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (s.empty()) continue;
    stops_.push_back(std::move(s));
  }
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return {};
  pending_.append(text);
  if (stops_.empty()) return std::exchange(pending_, std::string());
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    const size_t most = std::min(s.size() - 1, pending_.size());
    for (size_t k = most; k > keep; --k) {
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  if (stopped_) return {};
  return std::exchange(pending_, std::string());
}

}  // namespace pocket::server
