#pragma once
// A Reporter that keeps everything it is given, for tests.
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "uqnn/core/reporter.hpp"

namespace uqnn::testing {

class RecordingReporter : public Reporter {
 public:
  void message(MessageLevel level, const std::string& text) override {
    std::lock_guard lock(mutex_);
    messages.emplace_back(level, text);
  }
  void progress(const Progress& p) override {
    std::lock_guard lock(mutex_);
    updates.push_back(p);
  }
  std::vector<std::pair<MessageLevel, std::string>> messages;
  std::vector<Progress> updates;

 private:
  std::mutex mutex_;
};

}  // namespace uqnn::testing
