// The memory estimate of a fit: a model far beyond the machine stops at once with a message that
// says what to change (not std::bad_alloc after the data were read), each method's own matrices are
// counted, and the estimate is an upper bound of what a real run uses (peak RSS of the CLI).
#include <gtest/gtest.h>

#include <algorithm>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cli/cli_fixture.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/data/synthetic.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/memory.hpp"

namespace uqnn {
namespace {

using testing::run_cli;

FitConfig config_of(const nlohmann::json& options) {
  FitRequest r;
  for (const auto& [name, value] : options.items()) r.given.push_back({name, value, "--" + name});
  FitConfig c = make_fit_config(r);
  c.data.dataset = sine_case_ii(200);
  return c;
}

std::string error_of(const FitConfig& c) {
  try {
    make_fit_problem(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

FitSize size_of(Index K) {
  FitSize s;
  s.num_params = K;
  s.train_rows = s.all_rows = 1000;
  s.inputs = 10;
  s.outputs = 1;
  s.layer_widths = 111;
  return s;
}

TEST(FitMemory, AHugeNetworkStopsBeforeAnythingOfItsSizeIsAllocated) {
  // 1e10 weights: 80 GB for one copy of theta.
  const std::string message = error_of(config_of({{"method", "nuts"}, {"arch", "100000,100000"}}));
  EXPECT_NE(message.find("the fit would need about"), std::string::npos) << message;
  EXPECT_NE(message.find("draws kept: 4 chains x 1000 draws x 10000"), std::string::npos) << message;
  EXPECT_NE(message.find("Use fewer --draws or --chains, or --thin, or a smaller --arch"), std::string::npos) << message;
  EXPECT_NE(message.find("80% of physical memory"), std::string::npos) << message;
  // The same network as a point estimate: L-BFGS's history (auto's optimiser for a MAP fit on full
  // batches) is the largest part; with Adam, the working vectors.
  const std::string map = error_of(config_of({{"method", "map"}, {"arch", "100000,100000"}}));
  EXPECT_NE(map.find("the largest part is L-BFGS history"), std::string::npos) << map;
  EXPECT_NE(map.find("Use --optimizer adam"), std::string::npos) << map;
  const std::string adam = error_of(config_of({{"method", "map"}, {"arch", "100000,100000"}, {"optimizer", "adam"}}));
  EXPECT_NE(adam.find("the largest part is working vectors"), std::string::npos) << adam;
}

TEST(FitMemory, TheLimitIsTheUsersWhenGiven) {
  EXPECT_EQ(error_of(config_of({{"method", "map"}})), "");
  const std::string message = error_of(config_of({{"method", "map"}, {"max_memory_gb", 1e-6}}));
  EXPECT_NE(message.find("above the limit of 1.05 KiB (--max-memory-gb 1e-06)"), std::string::npos) << message;
  EXPECT_THROW(config_of({{"method", "map"}, {"max_memory_gb", -1.0}}), InputError);
}

TEST(FitMemory, EachMethodsOwnMatricesAreCounted) {
  const FitSize size = size_of(20000);
  const double K2 = 20000.0 * 20000.0 * 8.0;
  // amcmc keeps dense K x K matrices per chain; nuts does not.
  // (Above 1000 parameters its default proposal is diagonal: dense only when asked for.)
  const MemoryEstimate amcmc = estimate_fit_memory(config_of({{"method", "amcmc"}, {"am_covariance", "dense"}}), size);
  const MemoryEstimate diagonal = estimate_fit_memory(config_of({{"method", "amcmc"}}), size);
  EXPECT_EQ(diagonal.largest().what.find("adaptive Metropolis"), std::string::npos) << diagonal.largest().what;
  EXPECT_NE(amcmc.largest().what.find("adaptive Metropolis' dense proposal: 4 chains"), std::string::npos) << amcmc.largest().what;
  EXPECT_GE(amcmc.largest().bytes, 4 * 4 * K2);
  const MemoryEstimate nuts = estimate_fit_memory(config_of({{"method", "nuts"}}), size);
  EXPECT_LT(nuts.total(), 0.05 * amcmc.total());
  // NUTS' trees, and dei-nuts' (12 members unless --members: 12 chains of kept draws).
  const auto has = [](const MemoryEstimate& e, const std::string& what) {
    return std::any_of(e.items.begin(), e.items.end(), [&](const MemoryItem& i) { return i.what.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(has(nuts, "NUTS trees: ")) << nuts.largest().what;
  const MemoryEstimate dei = estimate_fit_memory(config_of({{"method", "dei-nuts"}, {"threads", 2}}), size);
  EXPECT_TRUE(has(dei, "NUTS trees: 2 chains at a time x 10 levels")) << dei.largest().what;
  EXPECT_TRUE(has(dei, "draws kept: 12 chains x 1000 draws")) << dei.largest().what;
  // ... unless its metric is dense (so for hmc and mala).
  for (const char* method : {"nuts", "hmc", "mala"}) {
    const MemoryEstimate dense = estimate_fit_memory(config_of({{"method", method}, {"metric", "dense"}}), size);
    EXPECT_NE(dense.largest().what.find("the dense metric: 4 chains x 4 matrices"), std::string::npos) << method << ": " << dense.largest().what;
    EXPECT_GE(dense.largest().bytes, 4 * 4 * K2) << method;
  }
  // A full Laplace holds its curvature; a diagonal one does not.
  const MemoryEstimate full = estimate_fit_memory(config_of({{"method", "laplace"}}), size);
  EXPECT_NE(full.largest().what.find("Laplace's full curvature"), std::string::npos);
  EXPECT_GE(full.largest().bytes, K2);
  const MemoryEstimate diag = estimate_fit_memory(config_of({{"method", "laplace"}, {"laplace_structure", "diag"}}), size);
  EXPECT_LT(diag.total(), 0.05 * full.total());
  // The draws kept grow with chains x draws / thin.
  const double one = estimate_fit_memory(config_of({{"method", "nuts"}, {"draws", 1000}}), size).total();
  const double thinned = estimate_fit_memory(config_of({{"method", "nuts"}, {"draws", 1000}, {"thin", 10}}), size).total();
  const double more = estimate_fit_memory(config_of({{"method", "nuts"}, {"draws", 10000}}), size).total();
  EXPECT_LT(thinned, 0.5 * one);
  EXPECT_GT(more, 5.0 * one);
}

TEST(FitMemory, ACnnsActivationsAreThoseOfOnePassNotOfTheWholeBatch) {
  // A CNN evaluates a large batch (a full-batch gradient, predictions on the training set) in
  // chunks of rows_per_pass examples: 4,000 images of a ResNet's 189,028 activations are not 4,000 x
  // 189,028 values at once (22 GiB, which refused the image example's fits).
  FitSize size = size_of(77754);
  size.train_rows = size.all_rows = 4000;
  size.layer_widths = 189028;
  const auto activations = [](const MemoryEstimate& e) {
    for (const MemoryItem& item : e.items)
      if (item.what.rfind("activations:", 0) == 0) return item;
    return MemoryItem{};
  };
  const MemoryItem all = activations(estimate_fit_memory(config_of({{"method", "sgld"}}), size));
  EXPECT_NE(all.what.find("4000 rows"), std::string::npos) << all.what;
  size.rows_per_pass = 177;
  const MemoryItem chunked = activations(estimate_fit_memory(config_of({{"method", "sgld"}}), size));
  EXPECT_NE(chunked.what.find("177 rows"), std::string::npos) << chunked.what;
  EXPECT_NEAR(chunked.bytes / all.bytes, 177.0 / 4000.0, 1e-12);
}

// The estimate bounds a real run's peak memory from above (and is not absurdly above it): the
// CLI's peak resident set, less that of a run with a tiny network (the program, libraries, data
// and buffers that do not grow), against the estimate for the large network.
long peak_rss_mib(const std::string& args) {
  // RUSAGE_CHILDREN's ru_maxrss is the largest of the waited-for descendants so far: each run is
  // made from its own forked process, which reports through a pipe.
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const auto r = run_cli(args);
    rusage usage{};
    getrusage(RUSAGE_CHILDREN, &usage);
    const long mib = r.exit_code == 0 ? usage.ru_maxrss / 1024 : -1;
    if (r.exit_code != 0) std::fprintf(stderr, "%s\n", r.output.c_str());
    (void)!write(fds[1], &mib, sizeof mib);
    _exit(0);
  }
  close(fds[1]);
  long mib = -1;
  if (read(fds[0], &mib, sizeof mib) != sizeof mib) mib = -1;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return mib;
}

bool under_address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

class FitMemoryCli : public testing::CliTest {};

TEST_F(FitMemoryCli, TheEstimateBoundsThePeakMemoryOfRealRuns) {
  if (under_address_sanitizer()) GTEST_SKIP() << "AddressSanitizer's shadow memory and quarantine change the resident set";
  const std::string common = "demo --quiet --figure none --idata-extras never --threads 2 ";
  for (const std::string method : {"ens --ens-members 2 --epochs 5", "nuts --chains 2 --warmup 10 --draws 20 --max-depth 3 --epochs 5"}) {
    const long base = peak_rss_mib(common + "--method " + method + " --arch 2 --out " + (dir_ / "small").string());
    const long big = peak_rss_mib(common + "--method " + method + " --arch 400,400 --out " + (dir_ / "big").string());
    ASSERT_GT(base, 0) << method;
    ASSERT_GT(big, 0) << method;
    const std::string name = method.substr(0, method.find(' '));
    FitConfig c = config_of({{"method", name}, {"threads", 2}, {"arch", "400,400"}});
    c.method_settings.update(config_of(nlohmann::json::parse(name == "ens" ? R"({"method": "ens", "ens_members": 2})"
                                                                          : R"({"method": "nuts", "chains": 2, "draws": 20, "max_depth": 3})"))
                                 .method_settings);
    FitSize size = size_of(400 * 400 + 3 * 400 + 1 + 1);
    size.train_rows = size.all_rows = 20;
    size.inputs = 1;
    size.layer_widths = 802;
    const double estimate = estimate_fit_memory(c, size).total() / 1048576.0;
    const double growth = static_cast<double>(big - base);
    std::printf("  %s: peak RSS %ld MiB with 161k weights, %ld MiB with 7; growth %.0f MiB, estimate %.0f MiB\n", name.c_str(),
                big, base, growth, estimate);
    EXPECT_GE(estimate, growth) << method;
    EXPECT_LE(estimate, 4.0 * growth) << method << ": an estimate far above use would refuse fits that fit";
  }
}

}  // namespace
}  // namespace uqnn
