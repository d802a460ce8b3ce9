#include "uqnn/adaptation/window_adaptation.hpp"

#include <fmt/format.h>

#include "uqnn/core/error.hpp"

namespace uqnn {

void WindowAdaptationParams::validate() const {
  require(init_buffer >= 0, "init_buffer", ">= 0");
  require(term_buffer >= 0, "term_buffer", ">= 0");
  require(base_window >= 1, "base_window", ">= 1");
}

WindowSchedule::WindowSchedule(long num_warmup, WindowAdaptationParams params)
    : num_warmup_(num_warmup),
      init_buffer_(params.init_buffer),
      term_buffer_(params.term_buffer),
      base_window_(params.base_window) {
  params.validate();
  require(num_warmup >= 0, "num_warmup", ">= 0");
  if (num_warmup < 20) {
    // Stan: "No estimation is performed for num_warmup < 20".
    note_ = "no metric adaptation for num_warmup < 20";
    init_buffer_ = term_buffer_ = base_window_ = 0;
    return;
  }
  if (init_buffer_ + base_window_ + term_buffer_ > num_warmup) {
    // Stan's set_window_params: 15% / 75% / 10% (truncated to integers as Stan's unsigned casts do).
    init_buffer_ = static_cast<long>(0.15 * static_cast<double>(num_warmup));
    term_buffer_ = static_cast<long>(0.1 * static_cast<double>(num_warmup));
    base_window_ = num_warmup - (init_buffer_ + term_buffer_);
    note_ = fmt::format("warmup too short for the configured windows; using init_buffer {}, window {}, term_buffer {}",
                        init_buffer_, base_window_, term_buffer_);
  }
  // Replays Stan's windowed_adaptation counters (restart, end_adaptation_window, compute_next_window).
  const long last = num_warmup - term_buffer_ - 1;
  long window_size = base_window_;
  long next_window = init_buffer_ + window_size - 1;
  long begin = init_buffer_;
  for (long counter = 0; counter < num_warmup; ++counter) {
    if (counter == next_window && counter != num_warmup) {
      windows_.push_back({begin, counter + 1});
      begin = counter + 1;
      if (next_window == last) break;
      window_size *= 2;
      next_window = counter + window_size;
      if (next_window != last && next_window + 2 * window_size >= num_warmup - term_buffer_) next_window = last;
    }
  }
}

bool WindowSchedule::in_window(long iteration) const {
  for (const auto& w : windows_)
    if (iteration >= w.begin && iteration < w.end) return true;
  return false;
}

bool WindowSchedule::ends_window(long iteration) const {
  for (const auto& w : windows_)
    if (iteration == w.end - 1) return true;
  return false;
}

}  // namespace uqnn
