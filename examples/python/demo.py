"""uqnn's demo from Python: NUTS on 20 noisy points of 4 sin(4x) + 5 sin(-12x + pi/2), as `uqnn demo`.
Run: PYTHONPATH=build/python python3 examples/python/demo.py   (writes demo_python.png)"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import uqnn

rng = np.random.default_rng(0)
x = np.concatenate([rng.uniform(-1, -0.2, 10), rng.uniform(0.2, 1, 10)])
y = 4 * np.sin(4 * x) + 5 * np.sin(-12 * x + np.pi / 2) + rng.normal(0, 0.5, 20)

bnn = uqnn.BNN(hidden=(10, 10), activation="tanh", noise=0.5, method="nuts", epochs=6000, warmup=300, draws=300).fit(x, y)
grid = np.linspace(-1.5, 1.5, 300)
lower, upper = bnn.predict_interval(grid, level=0.95)
plt.fill_between(grid, lower, upper, alpha=0.3, label="95% predictive interval")
plt.plot(grid, bnn.predict(grid), label="predictive mean")
plt.scatter(x, y, color="k", s=12, label="data")
plt.legend(), plt.title("uqnn NUTS: 1-10-10-1 tanh network"), plt.savefig("demo_python.png", dpi=120)
print(bnn.diagnostics().sort_values("r_hat").tail(3))
