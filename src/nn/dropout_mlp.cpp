#include "uqnn/nn/dropout_mlp.hpp"

#include <fmt/format.h>

#include "uqnn/core/error.hpp"

namespace uqnn {

DropoutMlp::DropoutMlp(MlpSpec spec, double drop_probability) : network_(std::move(spec)), p_(drop_probability) {
  require(p_ >= 0 && p_ < 1, "dropout probability p", "in [0, 1)");
  if (network_.spec().hidden.empty()) throw InputError("MC dropout needs at least one hidden layer (--arch)");
}

DropoutMlp::Masks DropoutMlp::sample_masks(Rng& rng, Index columns) const {
  Masks masks;
  const double keep_scale = 1.0 / (1.0 - p_);
  for (Index width : network_.spec().hidden) {
    Mat m(width, columns);
    for (Index c = 0; c < columns; ++c)
      for (Index j = 0; j < width; ++j) m(j, c) = rng.uniform() < p_ ? 0.0 : keep_scale;
    masks.push_back(std::move(m));
  }
  return masks;
}

void DropoutMlp::check_masks(const Masks& masks, Index n) const {
  const auto& hidden = network_.spec().hidden;
  if (masks.size() != hidden.size())
    throw std::invalid_argument(fmt::format("dropout: {} masks for {} hidden layers", masks.size(), hidden.size()));
  for (std::size_t l = 0; l < hidden.size(); ++l)
    if (masks[l].rows() != hidden[l] || (masks[l].cols() != 1 && masks[l].cols() != n))
      throw std::invalid_argument(fmt::format("dropout: mask {} is {}x{}, expected {} rows and 1 or {} columns", l,
                                              masks[l].rows(), masks[l].cols(), hidden[l], n));
}

namespace {
void apply(Mat& a, const Mat& mask) {
  if (mask.cols() == 1) a = (a.array().colwise() * mask.col(0).array()).matrix();
  else a = a.cwiseProduct(mask);
}
}  // namespace

double DropoutMlp::value_and_gradient(const Vec& theta, const Mat& X, const Masks& masks, const OutputLoss<double>& loss,
                                      Vec& grad) const {
  if (theta.size() != num_params()) throw std::invalid_argument("dropout: theta has the wrong size");
  check_masks(masks, X.cols());
  const auto& widths = network_.stack().widths;
  const Activation act = network_.stack().activation;
  const Index L = static_cast<Index>(widths.size()) - 1;
  std::vector<Mat> pre(static_cast<std::size_t>(L + 1)), post(static_cast<std::size_t>(L + 1));
  std::vector<Index> offset(static_cast<std::size_t>(L + 1), 0);
  post[0] = X;
  Index o = 0;
  for (Index l = 1; l <= L; ++l) {
    const auto ls = static_cast<std::size_t>(l);
    const Index out = widths[ls], in = widths[ls - 1];
    offset[ls] = o;
    const auto W = detail::weight_map(theta.data() + o, out, in);
    const Eigen::Map<const Vec> b(theta.data() + o + out * in, out);
    o += out * in + out;
    pre[ls].noalias() = W * post[ls - 1];
    pre[ls].colwise() += b;
    if (l < L) {
      activate(act, pre[ls], post[ls]);
      apply(post[ls], masks[ls - 1]);  // dropped after the activation: the next layer sees a masked input
    } else {
      post[ls] = pre[ls];
    }
  }
  if (grad.size() != num_params()) grad = Vec::Zero(num_params());
  Mat delta(post.back().rows(), post.back().cols());
  const double value = loss(post.back(), delta);
  for (Index l = L; l >= 1; --l) {
    const auto ls = static_cast<std::size_t>(l);
    const Index out = widths[ls], in = widths[ls - 1];
    if (l < L) {
      apply(delta, masks[ls - 1]);
      // activation_backward needs the unmasked activation a = act(z).
      Mat a;
      activate(act, pre[ls], a);
      activation_backward(act, pre[ls], a, delta);
    }
    Eigen::Map<RowMajorMatT<double>> dW(grad.data() + offset[ls], out, in);
    Eigen::Map<Vec> db(grad.data() + offset[ls] + out * in, out);
    dW.noalias() += delta * post[ls - 1].transpose();
    db.noalias() += delta.rowwise().sum();
    if (l > 1) {
      const auto W = detail::weight_map(theta.data() + offset[ls], out, in);
      Mat previous = W.transpose() * delta;
      delta.swap(previous);
    }
  }
  return value;
}

Mat DropoutMlp::forward(const Vec& theta, const Mat& X, const Masks& masks) const {
  Mat Y;
  Vec grad = Vec::Zero(num_params());
  value_and_gradient(theta, X, masks, [&Y](const Mat& out, Mat& d) {
    Y = out;
    d.setZero();
    return 0.0;
  }, grad);
  return Y;
}

Vec DropoutMlp::apply_mask(const Vec& theta, const Masks& masks) const { return theta.cwiseProduct(scale_of(masks, theta.size())); }

Vec DropoutMlp::scale_of(const Masks& masks, Index size) const {
  check_masks(masks, 1);
  for (const Mat& m : masks)
    if (m.cols() != 1) throw std::invalid_argument("dropout: a draw needs one shared mask column per layer");
  Vec scale = Vec::Ones(size);
  const auto& widths = network_.stack().widths;
  Index o = widths[1] * widths[0] + widths[1];
  for (std::size_t l = 2; l < widths.size(); ++l) {
    const Index rows = widths[l], cols = widths[l - 1];
    // column j (input unit j of this layer) scaled by its mask
    Eigen::Map<RowMajorMatT<double>>(scale.data() + o, rows, cols).rowwise() = masks[l - 2].col(0).transpose();
    o += rows * cols + rows;
  }
  return scale;
}

Vec DropoutMlp::variance_factor(Index size) const {
  Vec v = Vec::Zero(size);
  const auto& widths = network_.stack().widths;
  Index o = widths[1] * widths[0] + widths[1];
  for (std::size_t l = 2; l < widths.size(); ++l) {
    const Index weights = widths[l] * widths[l - 1];
    v.segment(o, weights).setConstant(p_ / (1.0 - p_));
    o += weights + widths[l];
  }
  return v;
}

}  // namespace uqnn
