// The log posterior of data/bench/README.md (B1, B2) for bench/samplers_vs_torch_stan_numpyro.sh:
// f(x) = W3 tanh(W2 tanh(W1 x + b1) + b2) + b3, theta in PyTorch nn.Linear order (each layer's W,
// fan_out x fan_in row-major, then b), Gaussian likelihood with fixed sigma, N(0, 1) prior on every
// parameter, constants dropped (target += keeps lp__ equal to BENCHMARKS.md's log posterior).
data {
  int<lower=1> N;
  int<lower=1> D;
  int<lower=1> H1;
  int<lower=1> H2;
  matrix[N, D] X;
  vector[N] y;
  real<lower=0> sigma;
  int<lower=1> T;
  matrix[T, D] Xtest;
}
parameters {
  vector[H1 * D + H1 + H2 * H1 + H2 + H2 + 1] theta;
}
model {
  // to_matrix(v, fan_in, fan_out)' reads v row-major as [fan_out, fan_in]
  matrix[H1, D] W1 = to_matrix(theta[1:(H1 * D)], D, H1)';
  row_vector[H1] b1 = theta[(H1 * D + 1):(H1 * D + H1)]';
  matrix[H2, H1] W2 = to_matrix(theta[(H1 * D + H1 + 1):(H1 * D + H1 + H2 * H1)], H1, H2)';
  row_vector[H2] b2 = theta[(H1 * D + H1 + H2 * H1 + 1):(H1 * D + H1 + H2 * H1 + H2)]';
  vector[H2] w3 = theta[(H1 * D + H1 + H2 * H1 + H2 + 1):(H1 * D + H1 + H2 * H1 + H2 + H2)];
  real b3 = theta[H1 * D + H1 + H2 * H1 + H2 + H2 + 1];
  vector[N] f = tanh(tanh(X * W1' + rep_matrix(b1, N)) * W2' + rep_matrix(b2, N)) * w3 + b3;
  target += -0.5 / square(sigma) * dot_self(y - f);
  target += -0.5 * dot_self(theta);
}
generated quantities {
  vector[T] f_test;
  {
    matrix[H1, D] W1 = to_matrix(theta[1:(H1 * D)], D, H1)';
    row_vector[H1] b1 = theta[(H1 * D + 1):(H1 * D + H1)]';
    matrix[H2, H1] W2 = to_matrix(theta[(H1 * D + H1 + 1):(H1 * D + H1 + H2 * H1)], H1, H2)';
    row_vector[H2] b2 = theta[(H1 * D + H1 + H2 * H1 + 1):(H1 * D + H1 + H2 * H1 + H2)]';
    vector[H2] w3 = theta[(H1 * D + H1 + H2 * H1 + H2 + 1):(H1 * D + H1 + H2 * H1 + H2 + H2)];
    real b3 = theta[H1 * D + H1 + H2 * H1 + H2 + H2 + 1];
    f_test = tanh(tanh(Xtest * W1' + rep_matrix(b1, T)) * W2' + rep_matrix(b2, T)) * w3 + b3;
  }
}
