#pragma once
/// @file Stan's windowed warmup: a fast initial buffer (step size only), slow windows that double
/// in length (metric estimated at the end of each, then the step size restarts), a fast terminal
/// buffer. With warmup shorter than init + base + term buffers Stan uses 15% / 75% / 10%.
///
/// References: Stan Reference Manual, "HMC algorithm parameters / Automatic parameter tuning";
/// Stan `windowed_adaptation.hpp`, `var_adaptation.hpp`.
#include <string>
#include <vector>

#include "uqnn/core/types.hpp"

namespace uqnn {

struct WindowAdaptationParams {
  long init_buffer = 75;   ///< >= 0
  long term_buffer = 50;   ///< >= 0
  long base_window = 25;   ///< >= 1
  void validate() const;
};

/// One slow window: iterations [begin, end) whose draws estimate the metric.
struct AdaptationWindow {
  long begin = 0;
  long end = 0;
  bool operator==(const AdaptationWindow&) const = default;
};

/// The schedule for `num_warmup` iterations, computed as Stan does (including its shrinking).
class WindowSchedule {
 public:
  WindowSchedule(long num_warmup, WindowAdaptationParams params = {});
  long num_warmup() const { return num_warmup_; }
  /// The buffers actually used (shrunk when warmup is short).
  long init_buffer() const { return init_buffer_; }
  long term_buffer() const { return term_buffer_; }
  long base_window() const { return base_window_; }
  /// False when num_warmup < 20 (Stan then adapts nothing but the step size... and warns).
  bool adapts_metric() const { return !windows_.empty(); }
  const std::vector<AdaptationWindow>& windows() const { return windows_; }
  /// Whether the draw of warmup iteration `iteration` (0-based) enters the metric estimate.
  bool in_window(long iteration) const;
  /// Whether iteration `iteration` is the last of a slow window (the metric is updated after it).
  bool ends_window(long iteration) const;
  /// A note when the schedule was shrunk or disabled (empty otherwise).
  const std::string& note() const { return note_; }

 private:
  long num_warmup_;
  long init_buffer_, term_buffer_, base_window_;
  std::vector<AdaptationWindow> windows_;
  std::string note_;
};

}  // namespace uqnn
