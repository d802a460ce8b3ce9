# Golden values of the MCMC diagnostics from the posterior R package (Stan's reference
# implementation), for tests/unit/diagnostics/posterior_golden_test.cpp. Run through
# scripts/regenerate-diagnostics-golden, which passes the output directory.
#
# The draws are generated here, deterministically, and written with 17 significant digits so that
# the C++ test reads exactly the doubles posterior saw (rounding draws to fewer digits can break or
# create ties between folded draws and move the tail R-hat by 1e-5).
suppressMessages(library(posterior))
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript diagnostics-golden.R OUTPUT_DIR")
out_dir <- args[1]
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)
RNGkind("Mersenne-Twister", "Inversion", "Rejection")
set.seed(20261124)

ar1 <- function(n, rho, start = rnorm(1)) {
  x <- numeric(n)
  x[1] <- start
  for (t in seq_len(n)[-1]) x[t] <- rho * x[t - 1] + sqrt(1 - rho^2) * rnorm(1)
  x
}
chains <- function(m, f) matrix(sapply(seq_len(m), f), ncol = m)  # a [draws, chains] matrix

cases <- list(
  # iid normal draws, even and odd draw counts (an odd chain loses its middle draw when split).
  iid = list(p0 = chains(4, function(j) rnorm(1000)), p1 = chains(4, function(j) rnorm(1000, 3, 0.1))),
  iid_odd = list(p0 = chains(4, function(j) rnorm(999))),
  # AR(1) chains of different persistence, odd length.
  ar_odd = list(p0 = chains(4, function(j) ar1(1001, c(0.9, 0.5, 0.95, 0.8)[j]))),
  # negative autocorrelation: ESS above the number of draws.
  antithetic = list(p0 = chains(4, function(j) ar1(1000, -0.7)), p1 = chains(4, function(j) ar1(1000, -0.3))),
  # one chain: R-hat compares its two halves.
  single_chain = list(p0 = chains(1, function(j) ar1(2000, 0.5)),
                      p1 = chains(1, function(j) ar1(2000, 0.3) + seq(0, 0.5, length.out = 2000))),
  single_chain_odd = list(p0 = chains(1, function(j) ar1(1999, 0.7))),
  # ties: average ranks decide the rank-normalised values.
  ties = list(p0 = chains(4, function(j) rpois(500, 2)), p1 = chains(4, function(j) round(rnorm(500), 1))),
  # one chain off: R-hat must flag it.
  shifted = list(p0 = chains(4, function(j) rnorm(400) + (j == 4) * 0.5)),
  # heavy tails: rank normalisation matters.
  cauchy = list(p0 = chains(4, function(j) rcauchy(500)), p1 = chains(4, function(j) ar1(500, 0.6)^3)),
  # the fewest draws for which R-hat (but not ESS: its split chains are shorter than 3) is defined,
  # and an odd short case.
  short = list(p0 = chains(2, function(j) rnorm(4))),
  short_odd = list(p0 = chains(3, function(j) rnorm(7))),
  # too few draws: R-hat, ESS and MCSE are NA (a split piece of 1 draw has no variance).
  few = list(p0 = chains(2, function(j) rnorm(3))),
  one_draw = list(p0 = chains(3, function(j) rnorm(1)))
)

fmt <- function(v) ifelse(is.na(v), "nan", sprintf("%.17g", v))

rows <- list()
for (case_name in names(cases)) {
  params <- cases[[case_name]]
  m <- ncol(params[[1]])
  s <- nrow(params[[1]])
  long <- data.frame(chain = rep(seq_len(m) - 1, each = s), draw = rep(seq_len(s) - 1, m))
  for (p in names(params)) long[[p]] <- fmt(as.vector(params[[p]]))
  write.csv(long, file.path(out_dir, paste0(case_name, ".csv")), row.names = FALSE, quote = FALSE)
  for (p in names(params)) {
    x <- params[[p]]
    v <- suppressWarnings(c(
      mean = mean(x), sd = sd(x),
      rhat = rhat(x),
      rhat_bulk = posterior:::.rhat(z_scale(posterior:::.split_chains(x))),
      rhat_tail = posterior:::.rhat(z_scale(posterior:::.split_chains(posterior:::fold_draws(x)))),
      rhat_basic = rhat_basic(x),
      rhat_unsplit = if (m > 1) rhat_basic(x, split = FALSE) else NA,
      ess_unsplit = ess_basic(x, split = FALSE),
      ess_mean = ess_mean(x),
      ess_bulk = ess_bulk(x), ess_tail = ess_tail(x),
      mcse_mean = mcse_mean(x), mcse_sd = mcse_sd(x),
      q05 = unname(quantile2(x, 0.05)), q50 = unname(quantile2(x, 0.5)), q95 = unname(quantile2(x, 0.95))))
    rows[[length(rows) + 1]] <- c(case = case_name, param = p, chains = m, draws = s, fmt(v))
  }
}
expected <- do.call(rbind, rows)
writeLines(c(paste0("# posterior ", packageVersion("posterior"), ", ", R.version.string,
                    "; written by scripts/regenerate-diagnostics-golden"),
             paste(colnames(expected), collapse = ","),
             apply(expected, 1, paste, collapse = ",")),
           file.path(out_dir, "posterior.csv"))
