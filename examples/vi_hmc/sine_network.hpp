#pragma once
// The 1-2-1 sine network of seed 000 section 4.1.1: f(x) = a sin(w1 x + phi1) + b sin(w2 x + phi2),
// i.e. eq. 21 as a network with hidden biases and no output bias (6 parameters; uqnn's Mlp always
// has an output bias, which would make 7). theta = [w1, w2, phi1, phi2, a, b] =
// [layer1.weight (2x1), layer1.bias (2), layer2.weight (1x2)], PyTorch order. The hidden layer is
// the library's dense stack; only the bias-free output layer is written here.
#include "uqnn/nn/dense_stack.hpp"
#include "uqnn/nn/model.hpp"

namespace uqnn::examples {

class SineNetwork : public ModelBase<SineNetwork> {
 public:
  SineNetwork() {
    hidden_.widths = {1, 2};
    hidden_.activation = Activation::Sine;
    hidden_.activate_last = true;
    hidden_.add_to_layout(layout_, "layer");
    layout_.add_matrix("layer2.weight", 1, 2, 2);
  }
  std::string kind() const override { return "sine_network"; }
  Index input_dim() const override { return 1; }
  Index output_dim() const override { return 1; }
  const ParamLayout& layout() const override { return layout_; }
  Vec initial_params(Rng& rng) const override {
    Vec theta(6);
    for (Index i = 0; i < 6; ++i) theta[i] = rng.normal();
    return theta;
  }
  nlohmann::json to_json() const override { return {{"kind", "sine_network"}}; }

  template <typename T>
  MatT<T> evaluate(const T* theta, const MatT<T>& X, const OutputLoss<T>* loss, T* loss_value, T* grad) const {
    DenseStackTape<T> tape;
    dense_forward(hidden_, theta, X, tape);
    const MatT<T>& H = tape.output();  // [2, n]
    const Eigen::Map<const VecT<T>> v(theta + 4, 2);
    MatT<T> Y = v.transpose() * H;
    if (!loss) return Y;
    MatT<T> dY(1, Y.cols());
    *loss_value = (*loss)(Y, dY);
    Eigen::Map<VecT<T>>(grad + 4, 2) += H * dY.transpose();
    MatT<T> dH = v * dY;
    dense_backward(hidden_, theta, tape, dH, grad, static_cast<MatT<T>*>(nullptr));
    return Y;
  }

 private:
  DenseStackSpec hidden_;
  ParamLayout layout_;
};

}  // namespace uqnn::examples
