#pragma once
// A Google Benchmark reporter that prints the usual console table and keeps each benchmark's CPU
// time per iteration (the median row when --benchmark_repetitions is given), for the ratio tables
// the benchmark programs print after it.
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

namespace uqnn::bench {

class CpuTimeCollector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      cpu_time_[r.run_name.function_name] = r.GetAdjustedCPUTime();
    }
    ConsoleReporter::ReportRuns(runs);
  }
  /// CPU time per iteration by benchmark name (in the benchmark's time unit).
  const std::map<std::string, double>& cpu_time() const { return cpu_time_; }

 private:
  std::map<std::string, double> cpu_time_;
};

}  // namespace uqnn::bench
