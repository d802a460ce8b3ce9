// Progress and messages: the tracker's counts, ETA and final update under concurrent chains; the
// stderr reporter's plain lines for batch logs (every tenth), its quiet mode; divergences as Stan
// counts them (after warmup).
#include <gtest/gtest.h>

#include <cstdio>
#include <thread>

#include "recording_reporter.hpp"
#include "uqnn/core/reporter.hpp"
#include "uqnn/run/observer.hpp"
#include "uqnn/run/run_chains.hpp"

namespace uqnn {
namespace {

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string text;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, f)) text.append(buffer, n);
  return text;
}

TEST(ProgressTracker, CountsEveryStepFromEveryThreadAndFinishesOnce) {
  const auto reporter = std::make_shared<testing::RecordingReporter>();
  {
    ProgressTracker tracker(reporter, "nuts", 40000);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&tracker] {
        for (int i = 0; i < 10000; ++i) tracker.advance(1, i % 1000 == 0 ? 1 : 0);
      });
    for (auto& t : threads) t.join();
    tracker.finish();
    tracker.finish();  // a second finish (and the destructor's) reports nothing
  }
  ASSERT_FALSE(reporter->updates.empty());
  int finished = 0;
  long previous = -1;
  for (const Progress& p : reporter->updates) {
    finished += p.finished;
    EXPECT_GE(p.done, previous);  // never goes back
    previous = p.done;
    EXPECT_EQ(p.total, 40000);
    EXPECT_EQ(p.task, "nuts");
  }
  EXPECT_EQ(finished, 1);
  const Progress& last = reporter->updates.back();
  EXPECT_TRUE(last.finished);
  EXPECT_EQ(last.done, 40000);
  EXPECT_EQ(last.divergences, 40);
  EXPECT_DOUBLE_EQ(last.eta_seconds, 0.0);
  EXPECT_GE(last.elapsed_seconds, 0.0);
}

TEST(ProgressTracker, EtaFromTheRateSoFarAndFinishedWhenDestroyed) {
  const auto reporter = std::make_shared<testing::RecordingReporter>();
  {
    ProgressTracker tracker(reporter, "map", 100);
    tracker.advance(25, 0, "loss 1");  // the first update is due at once
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    tracker.advance(25, 0, "loss 2");
  }  // early stopping: destroyed before 100
  ASSERT_EQ(reporter->updates.size(), 3u);
  const Progress& half = reporter->updates[1];
  EXPECT_EQ(half.done, 50);
  EXPECT_EQ(half.detail, "loss 2");
  // ETA = elapsed * (total - done) / done: equal to elapsed at half way.
  EXPECT_NEAR(half.eta_seconds, half.elapsed_seconds, 1e-12);
  EXPECT_TRUE(reporter->updates.back().finished);
  EXPECT_EQ(reporter->updates.back().done, 50);
}

TEST(StderrReporter, BatchLogsGetALineAtEveryTenthAndWarningsSurviveQuiet) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  const auto reporter = make_stderr_reporter(false, false, out);
  reporter->message(MessageLevel::Info, "uqnn fit: 20 rows");
  Progress p;
  p.task = "nuts";
  p.total = 1000;
  for (p.done = 0; p.done <= 1000; ++p.done) {  // an update per step, as if never throttled
    p.finished = p.done == 1000;
    p.divergences = p.done / 400;
    reporter->progress(p);
  }
  reporter->message(MessageLevel::Warning, "R-hat above 1.01");
  const std::string text = read_all(out);
  int lines = 0;
  for (char c : text) lines += c == '\n';
  // The info line, 0%, 10%, ..., 90% (10 lines), the final 100% line and the warning.
  EXPECT_EQ(lines, 1 + 10 + 1 + 1) << text;
  EXPECT_NE(text.find("nuts  50% (500/1000)"), std::string::npos) << text;
  EXPECT_NE(text.find("divergences 2"), std::string::npos) << text;
  EXPECT_NE(text.find("eta "), std::string::npos) << text;
  EXPECT_NE(text.find("warning: R-hat above 1.01\n"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);  // no bar redraws in a log file
  std::fclose(out);

  std::FILE* quiet_out = std::tmpfile();
  const auto quiet = make_stderr_reporter(true, false, quiet_out);
  quiet->message(MessageLevel::Info, "dropped");
  quiet->progress(p);
  quiet->message(MessageLevel::Warning, "kept");
  EXPECT_EQ(read_all(quiet_out), "warning: kept\n");
  std::fclose(quiet_out);
}

TEST(ProgressObserver, CountsDivergencesAfterWarmupOnly) {
  const auto reporter = std::make_shared<testing::RecordingReporter>();
  ProgressObserver observer(reporter, "hmc");
  RunConfig config;
  config.num_chains = 1;
  config.num_warmup = 2;
  config.num_draws = 3;
  observer.on_begin(config);
  DrawStats divergent;
  divergent.is_divergent = true;
  for (long i = 0; i < 5; ++i) {
    IterationEvent e;
    e.iteration = i;
    e.warmup = i < 2;
    e.stats = &divergent;
    observer.on_iteration(e);
  }
  RunResult result;
  observer.on_end(result);
  ASSERT_FALSE(reporter->updates.empty());
  EXPECT_EQ(reporter->updates.back().done, 5);
  EXPECT_EQ(reporter->updates.back().divergences, 3);
}

}  // namespace
}  // namespace uqnn
