"""Sine case II of Thiagarajan, Zaki & Shields ("Explainable deep learning for efficient and robust
uncertainty quantification", section 4.1.2 and Fig. 7) from Python: a 1-10-10-1 tanh network on 20
noisy points of 4 sin(4x) + 5 sin(-12x + pi/2) drawn on [-1, -0.2] and [0.2, 1], noise sd 0.05,
prior N(0, 1), no standardisation. Mean-field VI, NUTS on all 141 weights, and VI-HMC (HMC on the
weights that carry 90% of the first-order output variance) side by side, as in the paper's figure.

Run: PYTHONPATH=build/python python3 examples/python/sine_case2.py [OUT.png]   (about a minute)
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import uqnn


def truth(x):
    return 4 * np.sin(4 * x) + 5 * np.sin(-12 * x + np.pi / 2)


rng = np.random.default_rng(2024)
x = np.concatenate([rng.uniform(-1, -0.2, 10), rng.uniform(0.2, 1, 10)])
y = truth(x) + rng.normal(0, 0.05, 20)
model = dict(hidden=(10, 10), activation="tanh", noise=0.05, prior_sigma=1.0, standardize=False, seed=1)

fits = {
    "VI (mean field)": uqnn.BNN(method="vi", epochs=30000, vi_prior="model", **model),
    "NUTS, all 141 weights": uqnn.BNN(method="nuts", chains=4, warmup=1000, draws=1000, **model),
    "VI-HMC, tau = 0.9": uqnn.BNN(method="vi-hmc", tau=0.9, spread="median", init_spread=1.0, chains=4, warmup=1000,
                                  draws=1000, epochs=30000, vi_prior="model", **model),
}
grid = np.linspace(-1.2, 1.2, 241)
fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), sharey=True)
print(f"{'method':<24} {'predictive sd at the data':>20} {'sd in the gap |x|<0.2':>22} {'sd beyond |x|>1':>16}")
for ax, (name, bnn) in zip(axes, fits.items()):
    bnn.fit(x, y)
    mean, sd = bnn.predict(grid, return_std=True)
    lower, upper = bnn.predict_interval(grid, level=0.95)
    ax.fill_between(grid, lower, upper, alpha=0.3, label="95% predictive interval")
    ax.plot(grid, truth(grid), "k--", lw=1, label="truth")
    ax.plot(grid, mean, label="predictive mean")
    ax.scatter(x, y, color="k", s=10, zorder=3, label="data")
    ax.set_title(name), ax.set_xlabel("x")
    _, sd_data = bnn.predict(x, return_std=True)
    gap, beyond = np.abs(grid) < 0.2, np.abs(grid) > 1
    print(f"{name:<24} {np.mean(sd_data):>20.3f} {np.mean(sd[gap]):>22.3f} {np.mean(sd[beyond]):>16.3f}")
axes[0].set_ylabel("y"), axes[0].legend(loc="lower left", fontsize=8)
fig.suptitle("Sine case II: 1-10-10-1 tanh network, noise 0.05 (Thiagarajan et al., Fig. 7)")
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "sine_case2.png"
fig.savefig(out, dpi=110)
print("wrote", out)
