# Stan's NUTS (rstan, Debian's r-cran-rstan) on B1 / B2 for bench/samplers_vs_torch_stan_numpyro.sh.
#   Rscript stan_nuts.R compile MODEL.stan COMPILED.rds
#   Rscript stan_nuts.R sample COMPILED.rds SHARED_BENCH PROBLEM SIGMA H1 H2 CHAINS CORES WARMUP DRAWS
#           SEED MAX_DEPTH OUT.csv OUT.json
# Chains start at PROBLEM_theta0.csv; Stan's defaults otherwise (diagonal metric, adapt_delta 0.8).
# OUT.csv: chain, draw, lp__, f_1..f_T, accept_stat__, stepsize__, treedepth__, n_leapfrog__,
# divergent__ (draws after warmup); OUT.json: wall and per-chain elapsed seconds of sampling().
suppressPackageStartupMessages(library(rstan))
args <- commandArgs(trailingOnly = TRUE)
if (args[1] == "compile") {
  model <- stan_model(file = args[2], model_name = "mlp_posterior", auto_write = FALSE)
  saveRDS(model, args[3])
  quit(status = 0)
}
model <- readRDS(args[2])
dir <- args[3]; id <- args[4]
sigma <- as.numeric(args[5]); H1 <- as.integer(args[6]); H2 <- as.integer(args[7])
chains <- as.integer(args[8]); cores <- as.integer(args[9])
warmup <- as.integer(args[10]); draws <- as.integer(args[11]); seed <- as.integer(args[12])
max_depth <- as.integer(args[13]); out_csv <- args[14]; out_json <- args[15]
read <- function(name) as.matrix(read.csv(file.path(dir, paste0(id, "_", name, ".csv")), header = FALSE))
X <- read("X"); y <- as.vector(read("y")); Xtest <- read("Xtest"); theta0 <- as.vector(read("theta0"))
theta_ref <- as.vector(read("theta_ref"))
data <- list(N = nrow(X), D = ncol(X), H1 = H1, H2 = H2, X = X, y = y, sigma = sigma, T = nrow(Xtest),
             Xtest = Xtest)
inits <- lapply(seq_len(chains), function(c) list(theta = theta0))
t0 <- proc.time()
fit <- sampling(model, data = data, chains = chains, cores = cores, iter = warmup + draws, warmup = warmup,
                seed = seed, init = inits, control = list(max_treedepth = max_depth), refresh = 0)
wall <- (proc.time() - t0)[["elapsed"]]
draws_array <- extract(fit, pars = c("lp__", "f_test"), permuted = FALSE)  # [iteration, chain, quantity]
stats <- get_sampler_params(fit, inc_warmup = FALSE)
rows <- list()
for (c in seq_len(dim(draws_array)[2])) {
  q <- draws_array[, c, ]
  s <- stats[[c]]
  rows[[c]] <- data.frame(chain = c - 1, draw = seq_len(nrow(q)) - 1, q,
                          s[, c("accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__")],
                          check.names = FALSE)
}
table <- do.call(rbind, rows)
names(table)[3:(3 + dim(draws_array)[3] - 1)] <- c("lp__", paste0("f_", seq_len(dim(draws_array)[3] - 1)))
write.csv(table, out_csv, row.names = FALSE, quote = FALSE)
elapsed <- get_elapsed_time(fit)
# the model's log density at theta_ref, checked against BENCHMARKS.md's lpref by the Python side
lp_ref <- log_prob(fit, theta_ref, adjust_transform = FALSE)
writeLines(sprintf('{"tool": "stan", "lp_at_theta_ref": %.17g, "wall_seconds": %.6f, "chain_seconds": [%s], "warmup_seconds": [%s]}', lp_ref, wall,
                   paste(sprintf("%.6f", rowSums(elapsed)), collapse = ", "),
                   paste(sprintf("%.6f", elapsed[, "warmup"]), collapse = ", ")), out_json)
