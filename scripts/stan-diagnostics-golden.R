# Golden values of the MCMC diagnostics from rstan (Stan's own R implementation), for
# tests/unit/diagnostics/golden_test.cpp. Run through scripts/regenerate-stan-diagnostics-golden,
# which passes the case directory and the output file.
#
# Reads every CASE.csv of the case directory (long form: chain, draw, p0, p1, ...; 0-based chain and
# draw) and writes one row per case and parameter; the columns are defined in that directory's
# README.md. Unlike scripts/diagnostics-golden.R this does not generate draws: the case files are
# the input, as committed.
suppressMessages(suppressWarnings(requireNamespace("rstan", quietly = TRUE)))
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) stop("usage: Rscript stan-diagnostics-golden.R CASE_DIR OUTPUT_FILE")
case_dir <- args[1]
out_file <- args[2]
if (packageVersion("rstan") != "2.21.7") {
  warning("expected.csv was made with rstan 2.21.7; this is rstan ", packageVersion("rstan"),
          ", whose diagnostics may differ", call. = FALSE, immediate. = TRUE)
}

rhat_rfun <- rstan:::rhat_rfun
ess_rfun <- rstan:::ess_rfun
z_scale <- rstan:::z_scale
split_chains <- rstan:::split_chains
split4 <- function(sims) split_chains(split_chains(sims))  # kappa = 4: halves of halves
fold <- function(sims) abs(sims - median(sims))           # as in rstan::Rhat

# The cases in the order of expected.csv (and of the README), then any other case file by name.
known <- c("iid", "ar09", "ar099_short", "shifted", "cauchy", "antithetic", "single_chain", "tiny")
files <- list.files(case_dir, pattern = "\\.csv$")
present <- sub("\\.csv$", "", setdiff(files, "expected.csv"))
cases <- c(intersect(known, present), sort(setdiff(present, known)))
if (length(cases) == 0) stop("no case CSV in ", case_dir)

# [draws, chains] matrices, one per parameter, from the long form.
read_case <- function(path) {
  long <- read.csv(path, check.names = FALSE)
  if (!identical(names(long)[1:2], c("chain", "draw"))) stop(path, ": the first columns must be chain, draw")
  long <- long[order(long$chain, long$draw), ]
  m <- length(unique(long$chain))
  s <- nrow(long) / m
  if (s != floor(s) || !identical(as.numeric(long$chain), rep(seq_len(m) - 1, each = s)) ||
      !identical(as.numeric(long$draw), rep(seq_len(s) - 1, m))) {
    stop(path, ": expected chains 0..M-1, each with draws 0..S-1")
  }
  lapply(long[-(1:2)], function(v) matrix(as.numeric(v), nrow = s, ncol = m))
}

rows <- list()
for (case_name in cases) {
  params <- read_case(file.path(case_dir, paste0(case_name, ".csv")))
  for (p in names(params)) {
    sims <- params[[p]]
    rhat_bulk <- rhat_rfun(z_scale(split_chains(sims)))
    rhat_tail <- rhat_rfun(z_scale(split_chains(fold(sims))))
    rhat_rank <- rstan::Rhat(sims)
    stopifnot(rhat_rank == max(rhat_bulk, rhat_tail))
    rows[[length(rows) + 1]] <- data.frame(
      case = case_name, param = p, chains = ncol(sims), draws = nrow(sims),
      mean = mean(sims), sd = sd(sims),
      rhat_split = rhat_rfun(split_chains(sims)),
      rhat_bulk = rhat_bulk, rhat_tail = rhat_tail, rhat_rank = rhat_rank,
      rhat_split4 = rhat_rfun(split4(sims)),
      rhat_rank_split4 = max(rhat_rfun(z_scale(split4(sims))), rhat_rfun(z_scale(split4(fold(sims))))),
      ess_basic = ess_rfun(sims),
      ess_bulk = rstan::ess_bulk(sims),
      ess_tail = rstan::ess_tail(sims),
      mcse_mean = rstan:::mcse_mean(sims),
      mcse_sd = rstan:::mcse_sd(sims),
      q05 = unname(quantile(sims, 0.05)), q50 = unname(quantile(sims, 0.5)), q95 = unname(quantile(sims, 0.95)))
  }
}
expected <- do.call(rbind, rows)
# Every numeric column is formatted as a whole, with 15 significant digits for the value that needs
# the most decimals (R's format()): the columns line up, and the C++ reader skips the spaces.
numeric_cols <- vapply(expected, is.numeric, logical(1))
expected[numeric_cols] <- lapply(expected[numeric_cols], format, digits = 15)
write.csv(expected, out_file, row.names = FALSE, quote = FALSE)
