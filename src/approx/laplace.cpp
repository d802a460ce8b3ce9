#include "uqnn/approx/laplace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "uqnn/core/error.hpp"
#include "uqnn/nn/cnn.hpp"
#include "uqnn/nn/mlp.hpp"

namespace uqnn {

namespace {

/// -d^2 log p(y_i | f) / df^2 for every example, [T x T] each, eigenvalues clipped at 0.
std::vector<Mat> output_precisions(const Posterior& post, const Vec& theta) {
  const Index P = post.model().num_params(), E = post.likelihood().num_extra();
  const Mat Y = post.model().forward(theta.head(P), post.inputs());
  const Index T = Y.rows(), N = Y.cols();
  std::vector<Mat> lambda(static_cast<std::size_t>(N), Mat::Zero(T, T));
  const VecT<Dual> extra = make_dual_vector(theta.tail(E), Vec::Zero(E));
  for (Index o = 0; o < T; ++o) {
    MatT<Dual> Yd(T, N);
    for (Index i = 0; i < N; ++i)
      for (Index r = 0; r < T; ++r) Yd(r, i) = make_dual(Y(r, i), r == o ? 1.0 : 0.0);
    MatT<Dual> dY(T, N);
    VecT<Dual> d_extra(E);
    for (Index e = 0; e < E; ++e) d_extra[e] = make_dual(0.0, 0.0);
    post.likelihood().log_likelihood(Yd, post.targets(), extra, &dY, &d_extra);
    // The log-likelihood is a sum over examples, so its output Hessian is block diagonal.
    for (Index i = 0; i < N; ++i)
      for (Index r = 0; r < T; ++r) lambda[static_cast<std::size_t>(i)](r, o) = -dual_tangent(dY(r, i));
  }
  for (Mat& L : lambda) {
    L = 0.5 * (L + L.transpose()).eval();
    if (T == 1) {
      L(0, 0) = std::max(0.0, L(0, 0));
    } else {
      Eigen::SelfAdjointEigenSolver<Mat> eig(L);
      L = eig.eigenvectors() * eig.eigenvalues().cwiseMax(0.0).asDiagonal() * eig.eigenvectors().transpose();
    }
  }
  return lambda;
}

/// Gradient of log p(y_i | theta) for one example (network and extras).
Vec example_gradient(const Posterior& post, const Vec& theta, Index i) {
  Vec g = Vec::Zero(post.dim());
  post.log_likelihood(theta, post.inputs().col(i), post.targets().col(i), &g);
  return g;
}

/// Gauss-Newton's block for the likelihood's extras (a learned log sigma): their expected Fisher
/// information, with no cross terms to the network (Likelihood::extra_fisher_information). Their
/// exact Hessian rows are indefinite wherever the residuals are not at the noise's MAP (per example,
/// [1/sigma^2, 2r/sigma^2; 2r/sigma^2, 2r^2/sigma^2] has determinant -2 r^2 / sigma^4), which stopped
/// GGN with a learned noise on yacht.
Mat extras_fisher(const Posterior& post, const Vec& theta) {
  const Index P = post.model().num_params(), E = post.likelihood().num_extra();
  if (E == 0) return Mat(0, 0);
  return post.likelihood().extra_fisher_information(post.model().forward(theta.head(P), post.inputs()), theta.tail(E));
}

Vec unit(Index K, Index k) {
  Vec e = Vec::Zero(K);
  e[k] = 1.0;
  return e;
}

IndexVec all_coordinates(Index K) {
  IndexVec all(static_cast<std::size_t>(K));
  std::iota(all.begin(), all.end(), Index{0});
  return all;
}

/// `active` (or all coordinates) checked ascending and in range, split into the network's
/// coordinates and the extras' positions within the extras.
struct ActiveSplit {
  IndexVec all, network, extras;
};
ActiveSplit split_active(const Posterior& post, const IndexVec* active) {
  const Index K = post.dim(), P = post.model().num_params();
  ActiveSplit s;
  s.all = active ? *active : all_coordinates(K);
  for (std::size_t c = 0; c < s.all.size(); ++c) {
    const Index k = s.all[c];
    if (k < 0 || k >= K || (c > 0 && k <= s.all[c - 1]))
      throw std::invalid_argument(fmt::format("laplace: active coordinate {} is out of range [0, {}) or not ascending", k, K));
    (k < P ? s.network : s.extras).push_back(k < P ? k : k - P);
  }
  return s;
}

}  // namespace

CurvatureBackend parse_curvature_backend(const std::string& name) {
  if (name == "exact") return CurvatureBackend::Exact;
  if (name == "fisher") return CurvatureBackend::Fisher;
  if (name == "ggn") return CurvatureBackend::GaussNewton;
  throw InputError("Laplace curvature '" + name + "' is not known: valid are exact, fisher, ggn");
}
CurvatureStructure parse_curvature_structure(const std::string& name) {
  if (name == "full") return CurvatureStructure::Full;
  if (name == "diag" || name == "diagonal") return CurvatureStructure::Diagonal;
  if (name == "kron") return CurvatureStructure::Kronecker;
  throw InputError("Laplace structure '" + name + "' is not known: valid are full, diag, kron");
}
LaplaceSubset parse_laplace_subset(const std::string& name) {
  if (name == "all") return LaplaceSubset::All;
  if (name == "last-layer") return LaplaceSubset::LastLayer;
  throw InputError("Laplace subset '" + name + "' is not known: valid are all, last-layer");
}
std::string to_string(LaplaceSubset s) { return s == LaplaceSubset::All ? "all" : "last-layer"; }
std::string to_string(CurvatureBackend b) {
  return b == CurvatureBackend::Exact ? "exact" : b == CurvatureBackend::Fisher ? "fisher" : "ggn";
}
std::string to_string(CurvatureStructure s) {
  return s == CurvatureStructure::Full ? "full" : s == CurvatureStructure::Diagonal ? "diag" : "kron";
}

void LaplaceParams::validate() const {
  require(covariance_scale > 0 && std::isfinite(covariance_scale), "covariance_scale (s)", "a finite number > 0");
  require(max_memory_bytes > 0, "max_memory_bytes", "> 0");
}

double laplace_full_memory_bytes(Index K) { return 3.0 * 8.0 * static_cast<double>(K) * static_cast<double>(K); }

Vec prior_precision_diagonal(const Posterior& post, const Vec& theta) {
  const Index P = post.model().num_params(), E = post.likelihood().num_extra();
  Vec p(post.dim());
  p.head(P) = -post.prior().hessian_diagonal(theta.head(P));
  p.tail(E) = -post.likelihood().extra_prior_hessian_diagonal(theta.tail(E));
  return p;
}

IndexVec laplace_active_parameters(const Posterior& post, LaplaceSubset subset) {
  const Index K = post.dim();
  if (subset == LaplaceSubset::All) return all_coordinates(K);
  const auto& blocks = post.model().layout().blocks();
  const std::size_t n = blocks.size();
  // "X.weight" -> "X"; empty for any other name.
  const auto layer_of_weight = [](const std::string& name) {
    const std::string suffix = ".weight";
    const bool is_weight = name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    return is_weight ? name.substr(0, name.size() - suffix.size()) : std::string();
  };
  // The output layer: the last block is its "X.weight" (one row per output), or its "X.bias" after it.
  std::size_t w = n;
  if (n >= 1 && !layer_of_weight(blocks[n - 1].name).empty()) w = n - 1;
  else if (n >= 2 && !layer_of_weight(blocks[n - 2].name).empty() && blocks[n - 1].name == layer_of_weight(blocks[n - 2].name) + ".bias")
    w = n - 2;
  if (w == n || blocks[w].rows != post.model().output_dim())
    throw InputError(fmt::format("--laplace-subset last-layer needs a network whose output comes from a dense layer (--model mlp); "
                                 "the {} model's parameters end in '{}'",
                                 post.model().kind(), blocks.empty() ? std::string("nothing") : blocks.back().name));
  IndexVec active;
  for (Index k = blocks[w].offset; k < K; ++k) active.push_back(k);  // the layer, then every extra
  return active;
}

Mat curvature_matrix(const Posterior& post, const Vec& theta, CurvatureBackend backend, double max_memory_bytes,
                     const IndexVec* active_or_all) {
  const Index K = post.dim(), P = post.model().num_params();
  const ActiveSplit a = split_active(post, active_or_all);
  const Index S = static_cast<Index>(a.all.size()), Sn = static_cast<Index>(a.network.size());
  const double needed = laplace_full_memory_bytes(S);
  if (needed > max_memory_bytes)
    throw InputError(fmt::format("full Laplace over {} parameters needs about {:.3g} GiB for {} x {} matrices, above the "
                                 "limit of {:.3g} GiB: use --laplace-structure kron or diag, --laplace-subset last-layer, or "
                                 "raise --laplace-max-memory-gb",
                                 S, needed / 1073741824.0, S, S, max_memory_bytes / 1073741824.0));
  Mat H = Mat::Zero(S, S);
  switch (backend) {
    case CurvatureBackend::Exact:
      for (Index c = 0; c < S; ++c)
        H.col(c) = -post.hessian_vector_product(theta, unit(K, a.all[static_cast<std::size_t>(c)]))(a.all);
      H = 0.5 * (H + H.transpose()).eval();
      return H;
    case CurvatureBackend::Fisher:
      for (Index i = 0; i < post.num_data(); ++i) {
        const Vec g = example_gradient(post, theta, i)(a.all);
        H.selfadjointView<Eigen::Lower>().rankUpdate(g);
      }
      H = H.selfadjointView<Eigen::Lower>();
      break;
    case CurvatureBackend::GaussNewton: {
      const auto lambda = output_precisions(post, theta);
      Mat Hnet = Mat::Zero(Sn, Sn);
      for (Index i = 0; i < post.num_data(); ++i) {
        const Mat J = post.model().jacobian(theta.head(P), post.inputs().col(i))(Eigen::all, a.network);  // [T, Sn]
        Hnet.noalias() += J.transpose() * lambda[static_cast<std::size_t>(i)] * J;
      }
      H.topLeftCorner(Sn, Sn) = Hnet;
      if (!a.extras.empty()) H.bottomRightCorner(S - Sn, S - Sn) = extras_fisher(post, theta)(a.extras, a.extras);
      break;
    }
  }
  H.diagonal() += prior_precision_diagonal(post, theta)(a.all);
  return H;
}

Vec curvature_diagonal(const Posterior& post, const Vec& theta, CurvatureBackend backend, const IndexVec* active_or_all) {
  const Index K = post.dim(), P = post.model().num_params();
  const ActiveSplit a = split_active(post, active_or_all);
  const Index S = static_cast<Index>(a.all.size()), Sn = static_cast<Index>(a.network.size());
  Vec d = Vec::Zero(S);
  switch (backend) {
    case CurvatureBackend::Exact:
      for (Index c = 0; c < S; ++c) {
        const Index k = a.all[static_cast<std::size_t>(c)];
        d[c] = -post.hessian_vector_product(theta, unit(K, k))[k];
      }
      return d;
    case CurvatureBackend::Fisher:
      for (Index i = 0; i < post.num_data(); ++i) d += example_gradient(post, theta, i)(a.all).array().square().matrix();
      break;
    case CurvatureBackend::GaussNewton: {
      const auto lambda = output_precisions(post, theta);
      for (Index i = 0; i < post.num_data(); ++i) {
        const Mat J = post.model().jacobian(theta.head(P), post.inputs().col(i))(Eigen::all, a.network);
        d.head(Sn) += (J.transpose() * lambda[static_cast<std::size_t>(i)]).cwiseProduct(J.transpose()).rowwise().sum();
      }
      if (!a.extras.empty()) d.tail(S - Sn) = extras_fisher(post, theta).diagonal()(a.extras);
      break;
    }
  }
  d += prior_precision_diagonal(post, theta)(a.all);
  return d;
}

namespace {

/// The patches of a conv layer's input x [C, H, W] (one example) that its output positions see:
/// column t = (oh, ow) holds x[c, oh s - p + ki, ow s - p + kj] at row (c kh + ki) kw + kj (0
/// outside the image), PyTorch's order of a weight's [in, kh, kw]; then a row of ones when the
/// layer has a bias (the homogeneous coordinate).
Mat kfac_conv_patches(const CnnLayer& l, const double* x) {
  const ImageShape& in = l.in_shape;
  const Index H = l.out_shape.height, W = l.out_shape.width, K = in.channels * l.kernel_h * l.kernel_w;
  Mat patches = Mat::Zero(K + (l.bias ? 1 : 0), H * W);
  for (Index c = 0; c < in.channels; ++c)
    for (Index ki = 0; ki < l.kernel_h; ++ki)
      for (Index kj = 0; kj < l.kernel_w; ++kj)
        for (Index oh = 0; oh < H; ++oh)
          for (Index ow = 0; ow < W; ++ow) {
            const Index ih = oh * l.stride_h - l.pad_h + ki, iw = ow * l.stride_w - l.pad_w + kj;
            if (ih >= 0 && ih < in.height && iw >= 0 && iw < in.width)
              patches((c * l.kernel_h + ki) * l.kernel_w + kj, oh * W + ow) = x[(c * in.height + ih) * in.width + iw];
          }
  if (l.bias) patches.row(K).setOnes();
  return patches;
}

/// K-FAC for a Cnn's top-level conv and linear layers (Grosse and Martens 2016, "A Kronecker-factored
/// approximate Fisher matrix for convolution layers", KFC, with the GGN's output precisions instead
/// of sampled gradients): the layer's weight [out, K] and bias as [W b], block
///   A = sum_i sum_t a_it a_it^T                          (a_it: the patch at position t, and 1)
///   G = (1/N) sum_i (1/|T|) sum_t B_it^T Lambda_i B_it    (B_it = d f_i / d s_it, s_it the output at t)
/// (their eq. 5 and the "spatially uncorrelated derivatives" of section 3.2); a linear layer is one
/// position, as in the Mlp's factors. B_it^T Lambda_i B_it = sum_c (B_it^T l_ic)(B_it^T l_ic)^T for
/// Lambda_i = L_i L_i^T: one backward pass per output c. Other parameters (norms, residual blocks,
/// grouped convolutions) are left to the diagonal.
std::vector<KroneckerFactors> cnn_kronecker_factors(const Posterior& post, const Cnn& cnn, const Vec& theta, const IndexVec& active) {
  const Index P = cnn.num_params(), N = post.num_data(), T = cnn.output_dim();
  std::vector<char> is_active(static_cast<std::size_t>(post.dim()), 0);
  for (const Index k : active) is_active[static_cast<std::size_t>(k)] = 1;
  struct Chosen {
    std::size_t layer;
    Index rows, cols, positions;
  };
  std::vector<Chosen> chosen;
  std::vector<KroneckerFactors> factors;
  for (std::size_t li = 0; li < cnn.layers().size(); ++li) {
    const CnnLayer& l = cnn.layers()[li];
    if (l.type != CnnLayerType::Conv && l.type != CnnLayerType::Linear) continue;
    if (l.type == CnnLayerType::Conv && l.groups != 1) continue;  // block diagonal weights: left to the diagonal
    const auto first = is_active.begin() + l.offset, last = first + l.num_params;
    const auto count = std::count_if(first, last, [](char c) { return c != 0; });
    if (count == 0) continue;
    if (count != l.num_params) throw std::invalid_argument(fmt::format("kronecker_factors: layer {} is only partly active", l.name));
    const Index rows = l.out, K = l.num_params / rows - (l.bias ? 1 : 0);
    KroneckerFactors f;
    for (Index o = 0; o < rows; ++o) {
      for (Index j = 0; j < K; ++j) f.index.push_back(l.offset + o * K + j);
      if (l.bias) f.index.push_back(l.offset + rows * K + o);
    }
    const Index cols = K + (l.bias ? 1 : 0);
    f.input_factor = Mat::Zero(cols, cols);
    f.output_factor = Mat::Zero(rows, rows);
    factors.push_back(std::move(f));
    chosen.push_back({li, rows, cols, l.type == CnnLayerType::Conv ? l.out_shape.plane() : 1});
  }
  if (factors.empty()) return factors;
  // L_i with Lambda_i = L_i L_i^T (eigenvalues clipped at 0 by output_precisions).
  const auto lambda = output_precisions(post, theta);
  std::vector<Mat> roots;
  roots.reserve(lambda.size());
  for (const Mat& L : lambda) {
    const Eigen::SelfAdjointEigenSolver<Mat> eig(L);
    roots.push_back(eig.eigenvectors() * eig.eigenvalues().cwiseMax(0.0).cwiseSqrt().asDiagonal());
  }
  // In chunks of examples: the statistics keep every layer's input and output for the chunk.
  const Index chunk = std::max<Index>(1, std::min<Index>(N, cnn.examples_per_pass() / 4));
  for (Index start = 0; start < N; start += chunk) {
    const Index n = std::min(chunk, N - start);
    const Mat X = post.inputs().middleCols(start, n);
    for (Index c = 0; c < T; ++c) {
      Mat G(T, n);
      for (Index i = 0; i < n; ++i) G.col(i) = roots[static_cast<std::size_t>(start + i)].col(c);
      const Cnn::LayerStatistics stats = cnn.layer_statistics(theta.head(P), X, G);
      for (std::size_t k = 0, s = 0; k < chosen.size(); ++k) {
        while (stats.layer[s] != chosen[k].layer) ++s;
        const CnnLayer& l = cnn.layers()[chosen[k].layer];
        const Index positions = chosen[k].positions, rows = chosen[k].rows;
        for (Index i = 0; i < n; ++i) {
          // The output's cotangent as [rows, positions] (channel-major: row o holds its plane).
          const Eigen::Map<const Mat, 0, Eigen::OuterStride<>> ds(stats.output_cotangents[s].col(i).data(), positions, rows,
                                                                  Eigen::OuterStride<>(positions));
          factors[k].output_factor.noalias() += ds.transpose() * ds / static_cast<double>(positions);
          if (c > 0) continue;  // the inputs do not depend on the cotangent
          if (l.type == CnnLayerType::Conv) {
            const Mat patches = kfac_conv_patches(l, stats.inputs[s].col(i).data());
            factors[k].input_factor.noalias() += patches * patches.transpose();
          } else {
            Vec a(chosen[k].cols);
            a.head(l.in_shape.size()) = stats.inputs[s].col(i);
            if (l.bias) a[a.size() - 1] = 1.0;
            factors[k].input_factor.noalias() += a * a.transpose();
          }
        }
      }
    }
  }
  for (auto& f : factors) f.output_factor /= static_cast<double>(N);
  return factors;
}

}  // namespace

std::vector<KroneckerFactors> kronecker_factors(const Posterior& post, const Vec& theta, const IndexVec& active) {
  if (const auto* cnn = dynamic_cast<const Cnn*>(&post.model())) return cnn_kronecker_factors(post, *cnn, theta, active);
  const auto* mlp = dynamic_cast<const Mlp*>(&post.model());
  if (!mlp)
    throw InputError("--laplace-structure kron needs --model mlp with biases or cnn (its factors are a layer's inputs and output "
                     "gradients), not the " + post.model().kind() + " model: use --laplace-structure full or diag");
  const Index P = mlp->num_params(), N = post.num_data(), T = mlp->output_dim();
  const DenseStackSpec& stack = mlp->stack();
  std::vector<char> is_active(static_cast<std::size_t>(post.dim()), 0);
  for (const Index k : active) is_active[static_cast<std::size_t>(k)] = 1;
  DenseStackTape<double> tape;
  dense_forward(stack, theta.data(), post.inputs(), tape);
  std::vector<KroneckerFactors> layers;
  std::vector<IndexVec> bias_index;  // each layer's bias coordinates: its rows of d f / d z in the Jacobian
  Index offset = 0;
  for (Index l = 1; l <= stack.num_layers(); ++l) {
    const Index rows = stack.widths[static_cast<std::size_t>(l)], in = stack.widths[static_cast<std::size_t>(l - 1)];
    const Index bias = offset + rows * in, next = bias + rows;  // DenseStackSpec's layout: W row-major, then b
    const auto count = std::count_if(is_active.begin() + offset, is_active.begin() + next, [](char c) { return c != 0; });
    if (count != 0 && count != next - offset)
      throw std::invalid_argument(fmt::format("kronecker_factors: layer {} is only partly active", l));
    if (count != 0) {
      KroneckerFactors f;
      for (Index o = 0; o < rows; ++o) {
        for (Index j = 0; j < in; ++j) f.index.push_back(offset + o * in + j);
        f.index.push_back(bias + o);
      }
      Mat inputs(in + 1, N);  // the layer's inputs with a 1 for the bias
      inputs.topRows(in) = tape.layer_input(l);
      inputs.row(in).setOnes();
      f.input_factor = inputs * inputs.transpose();
      f.output_factor = Mat::Zero(rows, rows);
      IndexVec b(static_cast<std::size_t>(rows));
      std::iota(b.begin(), b.end(), bias);
      bias_index.push_back(std::move(b));
      layers.push_back(std::move(f));
    }
    offset = next;
  }
  if (layers.empty()) return layers;
  // G = (1/N) sum_i B_i^T Lambda_i B_i: d f / d b = d f / d z, so B_i is the Jacobian's bias columns.
  // Jacobians in chunks of at most ~32 MB.
  const auto lambda = output_precisions(post, theta);
  const Index chunk = std::max<Index>(1, static_cast<Index>(4e6 / static_cast<double>(std::max<Index>(1, T * P))));
  for (Index start = 0; start < N; start += chunk) {
    const Index n = std::min(chunk, N - start);
    const Mat J = mlp->jacobian(theta.head(P), post.inputs().middleCols(start, n));  // [n T, P]
    for (Index i = 0; i < n; ++i) {
      const Mat& Li = lambda[static_cast<std::size_t>(start + i)];
      for (std::size_t l = 0; l < layers.size(); ++l) {
        const Mat B = J.middleRows(i * T, T)(Eigen::all, bias_index[l]);  // [T, rows]
        layers[l].output_factor.noalias() += B.transpose() * Li * B;
      }
    }
  }
  for (auto& f : layers) f.output_factor /= static_cast<double>(N);
  return layers;
}

Vec refine_map_newton(const Posterior& post, Vec theta, Index steps, double max_memory_bytes) {
  Vec grad;
  double value = post.log_density_and_grad(theta, grad);
  for (Index s = 0; s < steps; ++s) {
    const Mat H = curvature_matrix(post, theta, CurvatureBackend::Exact, max_memory_bytes);
    Eigen::LLT<Mat> llt(H);
    if (llt.info() != Eigen::Success) break;  // not in a convex region: keep the optimiser's answer
    const Vec direction = llt.solve(grad);
    bool accepted = false;
    for (double t = 1.0; t > 1e-6; t *= 0.5) {
      const Vec candidate = theta + t * direction;
      Vec g;
      const double v = post.log_density_and_grad(candidate, g);
      if (std::isfinite(v) && v >= value) {
        theta = candidate;
        value = v;
        grad = g;
        accepted = true;
        break;
      }
    }
    if (!accepted || grad.norm() < 1e-12) break;
  }
  return theta;
}

/// One curvature structure of the Laplace approximation: how H (the curvature of -log p(theta | D),
/// prior included) is stored over the active coordinates, factorised into N(theta*, (s H)^-1),
/// compared with the prior, and rescaled by the marginal-likelihood tuning to H = tau H_lik + alpha P.
/// The network's active coordinates come first, the likelihood extras (a learned log sigma) last.
class LaplaceCurvature {
 public:
  virtual ~LaplaceCurvature() = default;
  /// N(theta*, (s H)^-1) over the active coordinates, the others fixed at theta*, and log det H.
  /// std::runtime_error with `advice` when H is not positive definite.
  struct Factorisation {
    std::shared_ptr<const ApproximatePosterior> approximation;
    double log_det = 0.0;
  };
  virtual Factorisation factorise(const Vec& map, const IndexVec& active, double s, const std::string& advice) const = 0;
  /// P^-1/2 H P^-1/2's eigenvalues (or its diagonal's ratios), P the prior precision diagonal over all
  /// coordinates with a flat prior counted as 1 (`prior_or_one`).
  virtual Vec over_prior(const Vec& prior_or_one, const IndexVec& active) const = 0;
  /// The eigenvalues e_i of P^-1/2 H_lik P^-1/2 over the network's P active coordinates (p their prior
  /// precision), H_lik = H - P.
  virtual Vec likelihood_eigenvalues(const Vec& p) const = 0;
  /// H <- tau H_lik + alpha P over the network's coordinates, where P = diag(p) is the prior
  /// precision H holds now and H_lik = H - P: successive calls compound.
  virtual void rescale(double tau, double alpha, const Vec& p) = 0;
  /// The extras' block (the last E active coordinates) replaced by `block` [E x E].
  virtual void set_extras_block(const Mat& block) = 0;
  /// Whether H couples the network's P coordinates with the E extras (tuning the network's prior alone
  /// then cannot split log det H).
  virtual bool couples_extras(Index P, Index E) const = 0;
  virtual const Mat& stored() const = 0;

 protected:
  /// Throws when an entry of a diagonal precision is not positive, naming its coordinate.
  void check_diagonal(const Vec& d, const IndexVec& index, const std::string& advice) const {
    for (Index k = 0; k < d.size(); ++k)
      if (!(d[k] > 0))
        throw std::runtime_error(fmt::format("Laplace: diagonal entry {} ({}) of the {} Hessian is {:.4g}, not positive{}",
                                             index[static_cast<std::size_t>(k)],
                                             posterior_->layout().name_of(index[static_cast<std::size_t>(k)]),
                                             to_string(backend_), d[k], advice));
  }
  /// The active coordinates' approximation `inner` as one over all K (the others at theta*).
  static std::shared_ptr<const ApproximatePosterior> over_all(const Vec& map, const IndexVec& active,
                                                              std::shared_ptr<const ApproximatePosterior> inner) {
    if (static_cast<Index>(active.size()) == map.size()) return inner;
    return std::make_shared<SubsetPosterior>(map, active, std::move(inner));
  }
  LaplaceCurvature(const Posterior& posterior, CurvatureBackend backend) : posterior_(&posterior), backend_(backend) {}
  const Posterior* posterior_;
  CurvatureBackend backend_;
};

namespace {

/// The whole S x S matrix H, factorised by Cholesky.
class FullCurvature final : public LaplaceCurvature {
 public:
  FullCurvature(const Posterior& post, const Vec& map, const IndexVec& active, const LaplaceParams& params)
      : LaplaceCurvature(post, params.backend), H_(curvature_matrix(post, map, params.backend, params.max_memory_bytes, &active)) {}

  Factorisation factorise(const Vec& map, const IndexVec& active, double s, const std::string& advice) const override {
    Eigen::LLT<Mat> llt(H_);
    if (llt.info() != Eigen::Success)
      throw std::runtime_error("Laplace: the " + to_string(backend_) + " Hessian of -log posterior is not positive definite" + advice);
    return {over_all(map, active, std::make_shared<GaussianPosterior>(map(active), s * H_)),
            2.0 * Mat(llt.matrixL()).diagonal().array().log().sum()};
  }
  Vec over_prior(const Vec& prior_or_one, const IndexVec& active) const override {
    const Vec p = prior_or_one(active);
    if (H_.rows() <= 2000) {
      const Vec r = p.cwiseSqrt().cwiseInverse();
      return Eigen::SelfAdjointEigenSolver<Mat>(r.asDiagonal() * H_ * r.asDiagonal(), Eigen::EigenvaluesOnly).eigenvalues();
    }
    return Vec(H_.diagonal()).cwiseQuotient(p);
  }
  Vec likelihood_eigenvalues(const Vec& p) const override {
    const Vec ps = p.cwiseSqrt().cwiseInverse();
    return Eigen::SelfAdjointEigenSolver<Mat>(ps.asDiagonal() * likelihood_block(p) * ps.asDiagonal(), Eigen::EigenvaluesOnly).eigenvalues();
  }
  void rescale(double tau, double alpha, const Vec& p) override {
    const Index P = p.size();
    H_.topLeftCorner(P, P) = tau * likelihood_block(p);
    H_.topLeftCorner(P, P).diagonal() += alpha * p;
  }
  void set_extras_block(const Mat& block) override { H_.bottomRightCorner(block.rows(), block.cols()) = block; }
  bool couples_extras(Index P, Index E) const override { return E > 0 && !H_.topRightCorner(P, E).isZero(0.0); }
  const Mat& stored() const override { return H_; }

 private:
  /// H_lik over the network's coordinates: H's top-left block minus the prior precision p.
  Mat likelihood_block(const Vec& p) const {
    Mat Hl = H_.topLeftCorner(p.size(), p.size());
    Hl.diagonal() -= p;
    return Hl;
  }
  Mat H_;
};

/// diag(H) as an S x 1 matrix.
class DiagonalCurvature final : public LaplaceCurvature {
 public:
  DiagonalCurvature(const Posterior& post, const Vec& map, const IndexVec& active, const LaplaceParams& params)
      : LaplaceCurvature(post, params.backend), d_(curvature_diagonal(post, map, params.backend, &active)) {}

  Factorisation factorise(const Vec& map, const IndexVec& active, double s, const std::string& advice) const override {
    const Vec d = d_.col(0);
    check_diagonal(d, active, advice);
    return {over_all(map, active, std::make_shared<DiagonalGaussianPosterior>(map(active), (s * d).cwiseSqrt().cwiseInverse())),
            d.array().log().sum()};
  }
  Vec over_prior(const Vec& prior_or_one, const IndexVec& active) const override {
    return Vec(d_.col(0)).cwiseQuotient(prior_or_one(active));
  }
  Vec likelihood_eigenvalues(const Vec& p) const override {
    return (d_.col(0).head(p.size()) - p).cwiseProduct(p.cwiseSqrt().cwiseInverse().cwiseAbs2());
  }
  void rescale(double tau, double alpha, const Vec& p) override {
    d_.col(0).head(p.size()) = tau * (d_.col(0).head(p.size()) - p) + alpha * p;
  }
  void set_extras_block(const Mat& block) override { d_.col(0).tail(block.rows()) = block.diagonal(); }
  bool couples_extras(Index, Index) const override { return false; }
  const Mat& stored() const override { return d_; }

 private:
  Mat d_;
};

/// K-FAC (Ritter et al. 2018): per dense layer, the likelihood block G (x) A kept as its factors'
/// eigendecompositions, and the layer's prior precision delta I; the coordinates in no layer (the
/// extras) as a diagonal. After tuning the layer precision is tau g_p a_q + alpha delta.
class KroneckerCurvature final : public LaplaceCurvature {
 public:
  KroneckerCurvature(const Posterior& post, const Vec& map, const IndexVec& active, const LaplaceParams& params)
      : LaplaceCurvature(post, params.backend) {
    if (params.backend != CurvatureBackend::GaussNewton)
      throw InputError("--laplace-structure kron factorises the generalized Gauss-Newton matrix: use --laplace-curvature ggn");
    const Vec prior = prior_precision_diagonal(post, map);
    std::vector<char> in_layer(static_cast<std::size_t>(map.size()), 0);
    for (KroneckerFactors& f : kronecker_factors(post, map, active)) {
      Layer layer;
      const Vec delta = prior(f.index);
      layer.prior_precision = delta[0];
      if (!((delta.array() - delta[0]).abs() <= 1e-12 * std::abs(delta[0])).all())
        throw InputError("--laplace-structure kron needs one prior precision shared by each layer's weights and bias "
                         "(--prior gaussian or fan-in)");
      const Eigen::SelfAdjointEigenSolver<Mat> g(f.output_factor), a(f.input_factor);
      layer.output_vectors = g.eigenvectors();
      layer.input_vectors = a.eigenvectors();
      layer.output_values = g.eigenvalues().cwiseMax(0.0);  // PSD up to round-off
      layer.input_values = a.eigenvalues().cwiseMax(0.0);
      for (const Index k : f.index) in_layer[static_cast<std::size_t>(k)] = 1;
      layer.index = std::move(f.index);
      layers_.push_back(std::move(layer));
    }
    for (const Index k : active)
      if (!in_layer[static_cast<std::size_t>(k)]) {
        rest_.push_back(k);
        if (k < post.model().num_params()) ++rest_network_;  // active lists the network's coordinates first
      }
    // The rest's diagonal (a cnn's norms and the extras), as the diagonal structure computes it.
    rest_diagonal_ = curvature_diagonal(post, map, params.backend, &rest_);
    rest_prior_ = prior(rest_).head(rest_network_);
  }

  Factorisation factorise(const Vec& map, const IndexVec&, double s, const std::string& advice) const override {
    // Layer precision in its factors' eigenbasis: tau g_p a_q + alpha delta (a scaled prior keeps
    // the eigenbasis because the prior is isotropic within the layer).
    std::vector<KroneckerGaussianPosterior::Block> blocks;
    double log_det = 0.0;
    for (const Layer& l : layers_) {
      KroneckerGaussianPosterior::Block b;
      b.index = l.index;
      b.output_vectors = l.output_vectors;
      b.input_vectors = l.input_vectors;
      b.precision = (likelihood_scale_ * l.output_values * l.input_values.transpose()).array() + prior_scale_ * l.prior_precision;
      if (!(b.precision.array() > 0).all())
        throw std::runtime_error(fmt::format("Laplace: the kron curvature of the layer at {} is not positive definite{}",
                                             posterior_->layout().name_of(l.index.front()), advice));
      log_det += b.precision.array().log().sum();
      b.precision *= s;
      blocks.push_back(std::move(b));
    }
    const Vec d = rest_diagonal_.col(0);
    check_diagonal(d, rest_, advice);
    log_det += d.array().log().sum();
    return {std::make_shared<KroneckerGaussianPosterior>(map, std::move(blocks), rest_, s * d), log_det};
  }
  Vec over_prior(const Vec& prior_or_one, const IndexVec& active) const override {
    Vec out(static_cast<Index>(active.size()));
    Index at = 0;
    const std::vector<Vec> values = likelihood_eigenvalues_by_layer();
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const double delta = layers_[l].prior_precision > 0 ? layers_[l].prior_precision : 1.0;
      out.segment(at, values[l].size()) = (likelihood_scale_ * values[l].array() + prior_scale_ * layers_[l].prior_precision) / delta;
      at += values[l].size();
    }
    out.tail(rest_diagonal_.rows()) = Vec(rest_diagonal_.col(0)).cwiseQuotient(prior_or_one(rest_));
    return out;
  }
  Vec likelihood_eigenvalues(const Vec& p) const override {  // g_p a_q / delta: the layer's prior is delta I
    Vec e(p.size());
    Index at = 0;
    const std::vector<Vec> values = likelihood_eigenvalues_by_layer();
    for (std::size_t l = 0; l < values.size(); ++l) {
      e.segment(at, values[l].size()) = values[l] / layers_[l].prior_precision;
      at += values[l].size();
    }
    // The network's coordinates outside the layers (a cnn's norms): their diagonal, as the diagonal
    // structure counts it.
    const auto d = rest_diagonal_.col(0).head(rest_network_).array();
    e.segment(at, rest_network_) = ((d - prior_scale_ * rest_prior_.array()) / likelihood_scale_ / rest_prior_.array()).matrix();
    if (at + rest_network_ != p.size()) throw std::logic_error("kron: the layers and the rest do not cover the network's coordinates");
    return e;
  }
  void rescale(double tau, double alpha, const Vec&) override {
    auto d = rest_diagonal_.col(0).head(rest_network_).array();
    d = tau * (d - prior_scale_ * rest_prior_.array()) + alpha * prior_scale_ * rest_prior_.array();
    likelihood_scale_ *= tau;
    prior_scale_ *= alpha;
  }
  void set_extras_block(const Mat& block) override { rest_diagonal_.col(0).tail(block.rows()) = block.diagonal(); }
  bool couples_extras(Index, Index) const override { return false; }
  const Mat& stored() const override { return rest_diagonal_; }

 private:
  struct Layer {
    IndexVec index;
    Mat output_vectors, input_vectors;
    Vec output_values, input_values;
    double prior_precision = 0.0;
  };
  /// The likelihood eigenvalues g_p a_q of each layer, one vector per layer.
  std::vector<Vec> likelihood_eigenvalues_by_layer() const {
    std::vector<Vec> values;
    for (const Layer& l : layers_) {
      const Mat outer = l.output_values * l.input_values.transpose();  // g_p a_q, [rows, cols]
      values.emplace_back(Eigen::Map<const Vec>(outer.data(), outer.size()));
    }
    return values;
  }
  std::vector<Layer> layers_;
  IndexVec rest_;          // active coordinates in no layer: the network's (a cnn's norms) first, then the extras
  Index rest_network_ = 0;  // how many of rest_ are the network's
  Mat rest_diagonal_;      // their diagonal, as a column
  Vec rest_prior_;         // the prior precision of the network's rest_ coordinates
  double likelihood_scale_ = 1.0, prior_scale_ = 1.0;  // tau and alpha: the product of every rescale
};

/// The maximum of the Laplace log marginal likelihood over tau (the likelihood's scale, when
/// `tune_noise`) and alpha (the prior precision's), given the eigenvalues e_i of P^-1/2 H_lik P^-1/2,
/// q = (theta* - m)^T P (theta* - m), the residual sum of squares r2 and noise_weight = sigma0^2 (the
/// noise variance the curvature was built with). As a function of u = log tau and v = log alpha
/// (up to constants),
///   L = -tau r2 / (2 sigma0^2) + (M / 2) u - alpha q / 2 + (P / 2) v - 1/2 sum_i log(tau e_i + alpha),
/// it is jointly concave (log-sum-exp), and its stationary point is MacKay's alpha q = gamma,
/// sigma^2 = r2 / (M - gamma) with gamma = sum_i tau e_i / (tau e_i + alpha). MacKay's fixed-point
/// iteration can overshoot to gamma > M (kron and diag count more effective parameters than
/// observations: a Kronecker product has rank up to min(N, fan-in) min(N T, fan-out)) and then
/// oscillates, so the maximum is found by Newton's method with backtracking instead, from tau =
/// alpha = 1 (the curvature as built).
struct EvidenceMaximum {
  double tau = 1.0, alpha = 1.0;
  Index iterations = 0;
  bool converged = false;
};
EvidenceMaximum maximise_evidence(const Vec& e, double q, double r2, double noise_weight, double M, bool tune_noise,
                                  Index max_iterations) {
  const Index P = e.size();
  const auto objective = [&](double u, double v) {
    const double tau = std::exp(u), alpha = std::exp(v);
    double value = -0.5 * alpha * q + 0.5 * static_cast<double>(P) * v;
    if (tune_noise) value += -0.5 * tau * r2 / noise_weight + 0.5 * M * u;
    for (Index i = 0; i < P; ++i) {
      const double den = tau * e[i] + alpha;
      if (!(den > 0)) return -std::numeric_limits<double>::infinity();
      value -= 0.5 * std::log(den);
    }
    return value;
  };
  EvidenceMaximum result;
  double u = 0.0, v = 0.0;
  double value = objective(u, v);
  if (!std::isfinite(value)) throw std::runtime_error("Laplace tuning: the curvature is not positive definite for the given prior precision");
  Index it = 0;
  for (; it < max_iterations; ++it) {
    const double tau = std::exp(u), alpha = std::exp(v);
    double gamma = 0.0, c = 0.0;
    for (Index i = 0; i < P; ++i) {
      const double den = tau * e[i] + alpha;
      gamma += tau * e[i] / den;
      c += 0.5 * tau * e[i] * alpha / (den * den);
    }
    // Gradient and Hessian in (u, v): g_u = (M - gamma - tau r2 / sigma0^2) / 2, g_v = (gamma - alpha q) / 2.
    const double a = tune_noise ? 0.5 * tau * r2 / noise_weight : 0.0, b = 0.5 * alpha * q;
    const double gu = tune_noise ? 0.5 * (M - gamma) - a : 0.0, gv = 0.5 * gamma - b;
    const double scale = 0.5 * std::max(M, static_cast<double>(P));
    if (std::abs(gu) <= 1e-10 * scale && std::abs(gv) <= 1e-10 * scale) {
      result.converged = true;
      break;
    }
    double du = 0.0, dv = 0.0;
    if (tune_noise) {  // -H = [[a + c, -c], [-c, b + c]], positive definite
      const double det = (a + c) * (b + c) - c * c;
      du = ((b + c) * gu + c * gv) / det;
      dv = (c * gu + (a + c) * gv) / det;
    } else {
      dv = gv / (b + c);
    }
    bool moved = false;
    for (double t = 1.0; t > 1e-12; t *= 0.5) {
      const double candidate = objective(u + t * du, v + t * dv);
      if (candidate >= value) {
        u += t * du;
        v += t * dv;
        moved = candidate > value;
        value = candidate;
        break;
      }
    }
    if (!moved) {  // at the maximum to the precision of L
      result.converged = true;
      break;
    }
  }
  result.tau = std::exp(u);
  result.alpha = std::exp(v);
  result.iterations = it;
  return result;
}

std::unique_ptr<LaplaceCurvature> make_curvature(const Posterior& post, const Vec& map, const IndexVec& active, const LaplaceParams& params) {
  switch (params.structure) {
    case CurvatureStructure::Full: return std::make_unique<FullCurvature>(post, map, active, params);
    case CurvatureStructure::Diagonal: return std::make_unique<DiagonalCurvature>(post, map, active, params);
    case CurvatureStructure::Kronecker: return std::make_unique<KroneckerCurvature>(post, map, active, params);
  }
  throw std::logic_error("laplace: unknown curvature structure");
}

}  // namespace

LaplaceApproximation::LaplaceApproximation(std::shared_ptr<const Posterior> posterior, Vec theta_map, LaplaceParams params)
    : posterior_(std::move(posterior)), map_(std::move(theta_map)), params_(params) {
  params_.validate();
  if (map_.size() != posterior_->dim())
    throw std::invalid_argument(fmt::format("laplace: theta has {} entries, the posterior {}", map_.size(), posterior_->dim()));
  active_ = laplace_active_parameters(*posterior_, params_.subset);
  curvature_ = make_curvature(*posterior_, map_, active_, params_);
  log_joint_ = posterior_->log_density(map_);
  factorise();
}

LaplaceApproximation::~LaplaceApproximation() = default;

const Mat& LaplaceApproximation::curvature() const { return curvature_->stored(); }

void LaplaceApproximation::factorise() {
  const std::string advice =
      params_.backend == CurvatureBackend::Exact
          ? " (the MAP may not be a minimum, or the exact Hessian is indefinite there): use --laplace-curvature ggn or "
            "fisher (positive semi-definite plus the prior), or --laplace-structure diag with ggn/fisher"
          : ": check the prior (its precision keeps ggn / fisher positive definite)";
  LaplaceCurvature::Factorisation f = curvature_->factorise(map_, active_, params_.covariance_scale, advice);
  log_det_ = f.log_det;
  approximation_ = std::move(f.approximation);
}

double LaplaceApproximation::log_marginal_likelihood() const {
  return log_joint_ + 0.5 * static_cast<double>(active_.size()) * kLog2Pi - 0.5 * log_det_;
}

Vec LaplaceApproximation::curvature_over_prior() const {
  const Vec prior = prior_precision_diagonal(*posterior_, map_);
  return curvature_->over_prior(Vec((prior.array() > 0).select(prior, 1.0)), active_);
}

namespace {
/// The Gaussian prior over the active network coordinates (first in `active`): their indices, their
/// precisions p (1 / sd^2) and q = sum p (theta* - m)^2, the terms alpha scales in the log prior.
struct NetworkPriorTerms {
  IndexVec network;
  Vec p;
  double q = 0.0;
};
NetworkPriorTerms network_prior_terms(const Posterior& post, const Vec& map, const IndexVec& active, const std::string& what) {
  const auto* gaussian = dynamic_cast<const GaussianPrior*>(&post.prior());
  if (!gaussian) throw InputError("Laplace " + what + " needs a Gaussian prior (--prior gaussian or fan-in)");
  NetworkPriorTerms t;
  for (const Index k : active)
    if (k < post.model().num_params()) t.network.push_back(k);
  t.p = prior_precision_diagonal(post, map)(t.network);
  const Vec dev = map(t.network) - gaussian->mean()(t.network);
  t.q = (dev.array().square() * t.p.array()).sum();
  return t;
}
}  // namespace

void LaplaceApproximation::set_prior_precision_factor(double alpha) {
  if (!(alpha > 0 && std::isfinite(alpha))) throw std::invalid_argument(fmt::format("prior precision factor {} must be > 0", alpha));
  const auto [network, p, q] = network_prior_terms(*posterior_, map_, active_, "prior-precision tuning");
  curvature_->rescale(1.0, alpha / prior_factor_, prior_factor_ * p);
  // log N(theta* | m, (alpha P)^-1) over the network's coordinates moves by
  // -(alpha - alpha0) q / 2 + (K / 2) log(alpha / alpha0).
  log_joint_ += -0.5 * (alpha - prior_factor_) * q + 0.5 * static_cast<double>(network.size()) * std::log(alpha / prior_factor_);
  prior_factor_ = alpha;
  factorise();
}

LaplaceTuning LaplaceApproximation::tune(bool tune_noise, Index max_iterations) {
  const Posterior& post = *posterior_;
  const auto [network, p, q] = network_prior_terms(post, map_, active_, "marginal-likelihood tuning");
  if (prior_factor_ != 1.0) throw std::logic_error("Laplace: tune() after set_prior_precision_factor()");
  // alpha scales the network's prior only. Likelihood extras (a learned log sigma) keep their block,
  // which must be decoupled from the network's for log det H to split: so it is with ggn (the
  // extras' expected Fisher) and with any diagonal structure.
  const Index E = post.likelihood().num_extra();
  const Index P = static_cast<Index>(network.size());
  if (curvature_->couples_extras(P, E))
    throw InputError("Laplace marginal-likelihood tuning with a learned noise needs a curvature that keeps the noise apart "
                     "from the network: use --laplace-curvature ggn, or --laplace-structure diag, or give --noise");
  const std::string kind = post.likelihood().kind();
  if (tune_noise && kind != "gaussian" && kind != "gaussian_learned_sigma")
    throw InputError("Laplace noise tuning needs a Gaussian likelihood with one noise sd, not '" + kind + "'");
  // A learned log sigma's curvature is its Fisher information, which does not depend on sigma, only
  // with ggn; moving it keeps the rest of H valid.
  const bool tune_learned_noise = tune_noise && E > 0;
  if (tune_learned_noise && params_.backend != CurvatureBackend::GaussNewton)
    throw InputError("Laplace noise tuning with a learned noise needs --laplace-curvature ggn");
  LaplaceTuning result;
  result.log_marginal_likelihood_before = log_marginal_likelihood();
  const double log_prior0 = post.log_prior(map_);
  const double log_lik0 = log_joint_ - log_prior0;
  // The residuals enter only a Gaussian's noise tuning (a classifier's outputs are logits, not
  // predictions of its one-column labels).
  const auto M = static_cast<double>(post.targets().size());
  double r2 = 0.0, sigma0 = 0.0;
  if (tune_noise) {
    const Mat Y = post.model().forward(map_.head(post.model().num_params()), post.inputs());
    r2 = (Y - post.targets()).squaredNorm();
    sigma0 = std::sqrt(post.likelihood().noise_variance(Y.leftCols(1), map_.tail(E))(0, 0));
  }

  // Eigenvalues e_i of P^-1/2 H_lik P^-1/2 (H_lik = H - P at sigma0): log det(tau H_lik + alpha P) =
  // log det P + sum_i log(tau e_i + alpha).
  const Vec e = curvature_->likelihood_eigenvalues(p);
  const double noise_weight = tune_noise ? sigma0 * sigma0 : 0.0;  // tau r2 / sigma0^2 = tau r2 / noise_weight
  const EvidenceMaximum maximum = maximise_evidence(e, q, r2, noise_weight, M, tune_noise, max_iterations);
  const double alpha = maximum.alpha, tau = maximum.tau;
  result.iterations = maximum.iterations;
  result.converged = maximum.converged;
  result.prior_precision_factor = alpha;
  if (tune_noise) result.noise_sd = sigma0 / std::sqrt(tau);
  // Rebuild H and the log joint with the tuned values.
  curvature_->rescale(tau, alpha, p);
  double log_prior = log_prior0 - 0.5 * (alpha - 1.0) * q + 0.5 * static_cast<double>(P) * std::log(alpha);
  if (tune_learned_noise) {
    // The noise as a hyperparameter (type-II maximum likelihood): the centre's log sigma moves to the
    // tuned value, with its prior term and its block of H (the Fisher information plus the prior's).
    const Likelihood& lik = post.likelihood();
    log_prior -= lik.extra_log_prior(map_.tail(E), nullptr);
    map_[post.model().num_params()] = std::log(result.noise_sd);
    log_prior += lik.extra_log_prior(map_.tail(E), nullptr);
    Mat block = extras_fisher(post, map_);
    block.diagonal() += prior_precision_diagonal(post, map_).tail(E);
    curvature_->set_extras_block(block);
  }
  double log_lik = log_lik0;
  if (tune_noise) {
    const double sigma = result.noise_sd;
    log_lik += r2 / (2 * sigma0 * sigma0) - r2 / (2 * sigma * sigma) - M * std::log(sigma / sigma0);
  }
  log_joint_ = log_lik + log_prior;
  factorise();
  result.log_marginal_likelihood_after = log_marginal_likelihood();
  return result;
}

}  // namespace uqnn
