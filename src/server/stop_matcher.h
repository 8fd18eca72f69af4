// StopMatcher: OpenAI's `stop` strings over streamed text. Generation stops at the first piece of text
// after which a stop string appears; the output ends where the earliest stop string in it starts. Text
// that could still become a stop string is held back, so a client never sees part of one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pocket::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds generated text; returns the text that is now safe to emit. After a stop string is seen, returns
  // what precedes it and stopped() is true (later calls return "").
  std::string push(std::string_view text);
  // The held-back tail at the end of generation (no stop string came).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;  // non-empty strings only
  std::string pending_;  // text not yet emitted; shorter than the longest stop string unless stopped
  bool stopped_ = false;
};

}  // namespace pocket::server
