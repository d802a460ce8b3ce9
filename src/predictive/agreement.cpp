#include "uqnn/predictive/agreement.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {

double wasserstein1(std::vector<double> a, std::vector<double> b) {
  require(!a.empty() && !b.empty(), "samples", "non-empty");
  for (const auto* s : {&a, &b})
    for (double v : *s) require(std::isfinite(v), "samples", "finite");
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  // Sweep the merged values: between consecutive values x_k < x_{k+1} both empirical CDFs are
  // constant, and |F_a - F_b| (x_{k+1} - x_k) adds to the integral.
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  std::size_t i = 0, j = 0;
  double total = 0, x = std::min(a.front(), b.front());
  while (i < a.size() || j < b.size()) {
    const double next = j == b.size() || (i < a.size() && a[i] <= b[j]) ? a[i] : b[j];
    total += std::abs(static_cast<double>(i) / na - static_cast<double>(j) / nb) * (next - x);
    x = next;
    while (i < a.size() && a[i] == x) ++i;
    while (j < b.size() && b[j] == x) ++j;
  }
  return total;
}

double total_variation(const Vec& p, const Vec& q) {
  require(p.size() == q.size() && p.size() > 0, "probabilities", "two vectors over the same classes");
  return 0.5 * (p - q).cwiseAbs().sum();
}

namespace {
Vec as_two_classes(const Vec& p) {
  if (p.size() != 1) return p;
  Vec two(2);
  two << 1 - p(0), p(0);
  return two;
}
Index top_class(const Vec& p) {
  Index best = 0;
  for (Index k = 1; k < p.size(); ++k)
    if (p(k) > p(best)) best = k;
  return best;
}
}  // namespace

ClassAgreement class_agreement(const Mat& probabilities, const Mat& reference) {
  require(probabilities.rows() == reference.rows() && probabilities.cols() == reference.cols(), "probabilities",
          "the reference's shape [classes, rows]");
  ClassAgreement out;
  out.top1.resize(probabilities.cols());
  out.total_variation.resize(probabilities.cols());
  for (Index i = 0; i < probabilities.cols(); ++i) {
    const Vec p = as_two_classes(probabilities.col(i)), q = as_two_classes(reference.col(i));
    out.top1(i) = top_class(p) == top_class(q) ? 1.0 : 0.0;
    out.total_variation(i) = total_variation(p, q);
  }
  return out;
}

}  // namespace uqnn
