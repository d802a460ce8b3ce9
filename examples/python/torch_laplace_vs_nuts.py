"""A PyTorch network trained by the user, then given a Laplace and a NUTS posterior by uqnn, compared
in one figure (torch_laplace_vs_nuts.png).
Run: PYTHONPATH=build/python python3 examples/python/torch_laplace_vs_nuts.py"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

import uqnn

rng = np.random.default_rng(1)
x = np.concatenate([rng.uniform(-1, -0.3, 25), rng.uniform(0.3, 1, 25)])
y = np.sin(3 * x) + 0.1 * rng.normal(size=x.size)

# The user's network, trained the usual way.
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(1, 20), torch.nn.Tanh(), torch.nn.Linear(20, 1)).double()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
X, Y = torch.tensor(x[:, None]), torch.tensor(y[:, None])
for _ in range(3000):
    opt.zero_grad()
    loss = ((net(X) - Y) ** 2).mean() + 1e-4 * sum((p**2).sum() for p in net.parameters())
    loss.backward()
    opt.step()

grid = np.linspace(-1.6, 1.6, 300)
common = dict(noise=0.1, standardize=False, progress=False)
laplace = uqnn.BNN.from_torch(net, method="laplace", laplace_curvature="ggn", laplace_predictive="glm",
                              epochs=1, lr=1e-300, **common).fit(x, y)
nuts = uqnn.BNN.from_torch(net, method="nuts", chains=4, warmup=500, draws=500, epochs=1, lr=1e-300, **common).fit(x, y)
with torch.no_grad():
    torch_mean = net(torch.tensor(grid[:, None]))[:, 0].numpy()

fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, (name, bnn) in zip(axes, [("Laplace (GGN, GLM predictive)", laplace), ("NUTS, 4 x 500 draws", nuts)]):
    lo, hi = bnn.predict_interval(grid, level=0.95)
    ax.fill_between(grid, lo, hi, alpha=0.3, label="95% predictive interval")
    ax.plot(grid, bnn.predict(grid), label="predictive mean")
    ax.plot(grid, torch_mean, "k--", lw=1, label="the trained PyTorch network")
    ax.scatter(x, y, s=10, color="k")
    ax.set_title(name), ax.set_xlabel("x")
axes[0].legend(loc="lower left", fontsize=8)
fig.suptitle("uqnn posteriors of a user's PyTorch network (1-20-1 tanh)")
fig.savefig("torch_laplace_vs_nuts.png", dpi=110, bbox_inches="tight")
print("RMSE of the predictive mean to sin(3x) on [-1, 1]:",
      {n: float(np.sqrt(np.mean((b.predict(grid[np.abs(grid) <= 1]) - np.sin(3 * grid[np.abs(grid) <= 1])) ** 2)))
       for n, b in [("laplace", laplace), ("nuts", nuts)]})
