#!/usr/bin/python3
"""Golden values for tests/unit/predictive/scores_test.cpp, from reference implementations.

Run from the repository root (Debian python3 with python3-sklearn): tests/reference/scores/make_scores_golden.py
It writes tests/reference/scores/scores_golden.json: the inputs (drawn here with a fixed seed) and
what scikit-learn (brier_score_loss, roc_auc_score, average_precision_score, roc_curve) and
properscoring's formulas (written out below; properscoring itself is not a Debian package) give for
them. The mixture CRPS is also checked against direct numerical integration of its definition,
int (F(x) - 1{x >= y})^2 dx (scipy.integrate.quad), an implementation independent of Grimit et
al. (2006)'s closed form.
"""
import json
import math
import os

import numpy as np
from scipy import integrate, stats
from sklearn.metrics import average_precision_score, brier_score_loss, roc_auc_score, roc_curve

rng = np.random.default_rng(20061)
out = {}

# --- CRPS -----------------------------------------------------------------------------------
def crps_gaussian(mu, sig, x):  # properscoring.crps_gaussian, written out
    sx = (x - mu) / sig
    return sig * (sx * (2 * stats.norm.cdf(sx) - 1) + 2 * stats.norm.pdf(sx) - 1 / np.sqrt(np.pi))

def crps_ensemble(obs, ens):  # properscoring.crps_ensemble (weights equal), written out: O(m^2)
    ens = np.asarray(ens)
    return np.mean(np.abs(ens - obs)) - 0.5 * np.mean(np.abs(ens[:, None] - ens[None, :]))

def crps_mixture_by_integration(mu, sd, y):
    F = lambda x: np.mean(stats.norm.cdf((x - mu) / sd))
    lo, hi = min(mu.min() - 12 * sd.max(), y - 1), max(mu.max() + 12 * sd.max(), y + 1)
    a, _ = integrate.quad(lambda x: F(x) ** 2, lo, y, limit=400, epsabs=1e-13, epsrel=1e-12)
    b, _ = integrate.quad(lambda x: (1 - F(x)) ** 2, y, hi, limit=400, epsabs=1e-13, epsrel=1e-12)
    return a + b

n = 7
g_mean, g_sd, g_y = rng.normal(size=n), rng.uniform(0.2, 2.0, size=n), rng.normal(size=n) * 1.5
out["gaussian"] = {"mean": g_mean.tolist(), "sd": g_sd.tolist(), "y": g_y.tolist(),
                   "crps": crps_gaussian(g_mean, g_sd, g_y).tolist(),
                   "pit": stats.norm.cdf(g_y, g_mean, g_sd).tolist(),
                   "nll": float(np.mean(-stats.norm.logpdf(g_y, g_mean, g_sd)))}
S = 5
m_means, m_sds = rng.normal(size=(S, n)), rng.uniform(0.1, 1.5, size=(S, n))
m_y = rng.normal(size=n)
out["mixture"] = {"means": m_means.tolist(), "sds": m_sds.tolist(), "y": m_y.tolist(),
                  "crps": [crps_mixture_by_integration(m_means[:, i], m_sds[:, i], m_y[i]) for i in range(n)],
                  "pit": [float(np.mean(stats.norm.cdf((m_y[i] - m_means[:, i]) / m_sds[:, i]))) for i in range(n)],
                  "nll": float(np.mean([-np.log(np.mean(stats.norm.pdf(m_y[i], m_means[:, i], m_sds[:, i]))) for i in range(n)])),
                  "median": [float(__import__("scipy.optimize", fromlist=["brentq"]).brentq(
                      lambda x: np.mean(stats.norm.cdf((x - m_means[:, i]) / m_sds[:, i])) - 0.5, -30, 30, xtol=1e-14)) for i in range(n)]}
m = 9
s_samples = np.round(rng.normal(size=(m, n)), 1)  # rounded: ties among samples and with y
s_y = np.round(rng.normal(size=n), 1)
out["samples"] = {"samples": s_samples.tolist(), "y": s_y.tolist(),
                  "crps": [crps_ensemble(s_y[i], s_samples[:, i]) for i in range(n)],
                  "pit": [float(np.mean(s_samples[:, i] <= s_y[i])) for i in range(n)],
                  "q90": np.quantile(s_samples, 0.95, axis=0).tolist(), "q10": np.quantile(s_samples, 0.05, axis=0).tolist()}

# --- classification --------------------------------------------------------------------------
N, K, B = 203, 4, 10  # N not a multiple of B: equal-mass bins differ in size
logits = rng.normal(size=(N, K)) * 1.5
probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
labels = np.array([rng.choice(K, p=p) for p in probs ** 0.7 / (probs ** 0.7).sum(1, keepdims=True)])
conf, pred = probs.max(1), probs.argmax(1)
correct = (pred == labels).astype(float)

def ece_mce(bins):
    ece, mce = 0.0, 0.0
    for idx in bins:
        if len(idx) == 0:
            continue
        gap = abs(correct[idx].mean() - conf[idx].mean())
        ece += len(idx) / N * gap
        mce = max(mce, gap)
    return ece, mce

width_bins = [np.where(np.minimum(B - 1, np.floor(conf * B)).astype(int) == b)[0] for b in range(B)]
order = np.argsort(conf, kind="stable")
mass_bins = [order[N * b // B: N * (b + 1) // B] for b in range(B)]
ew, em = ece_mce(width_bins), ece_mce(mass_bins)
# Risk-coverage without ties in confidence: risk at k = errors among the k most confident / k.
desc = np.argsort(-conf, kind="stable")
risk = np.cumsum(1 - correct[desc]) / np.arange(1, N + 1)
onehot = np.eye(K)[labels]
out["categorical"] = {"probabilities": probs.tolist(), "labels": labels.tolist(), "bins": B,
                      "accuracy": float(correct.mean()),
                      "brier": float(np.mean(np.sum((probs - onehot) ** 2, 1))),
                      "ece_width": ew[0], "mce_width": ew[1], "ece_mass": em[0], "mce_mass": em[1],
                      "aurc": float(risk.mean())}
pb = rng.uniform(size=60)
yb = (rng.uniform(size=60) < pb ** 1.3).astype(int)
out["bernoulli"] = {"p": pb.tolist(), "y": yb.tolist(), "brier": float(brier_score_loss(yb, pb))}

# --- OOD detection ---------------------------------------------------------------------------
def fpr95(y, s):
    fpr, tpr, _ = roc_curve(y, s)
    return float(fpr[np.searchsorted(tpr, 0.95, side="left")])

for name, rounding in (("ood_continuous", None), ("ood_ties", 1)):
    a, b = rng.normal(size=150), rng.normal(loc=0.8, size=100)  # 100 OOD rows: TPR reaches 0.95 exactly
    if rounding is not None:
        a, b = np.round(a, rounding), np.round(b, rounding)
    y = np.r_[np.zeros(a.size), np.ones(b.size)]
    s = np.r_[a, b]
    out[name] = {"in": a.tolist(), "out": b.tolist(), "auroc": float(roc_auc_score(y, s)),
                 "aupr": float(average_precision_score(y, s)), "fpr95": fpr95(y, s)}

# Entropies and mutual information of per-draw class probabilities.
D, M = 6, 5
draws = rng.dirichlet(np.ones(3) * 0.7, size=(D, M))  # (draw, point, class)
mean = draws.mean(0)
H = lambda p: -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0), -1)
out["uncertainty"] = {"draws": draws.transpose(0, 2, 1).tolist(),  # (draw, class, point)
                      "predictive_entropy": H(mean).tolist(), "expected_entropy": H(draws).mean(0).tolist(),
                      "mutual_information": (H(mean) - H(draws).mean(0)).tolist(), "max_probability": mean.max(1).tolist()}

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scores_golden.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", path)
