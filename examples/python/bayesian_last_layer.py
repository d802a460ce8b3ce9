"""Bayesian last layers on frozen PyTorch networks: the last nn.Linear of a trained network given a
posterior by uqnn (NUTS, last-layer Laplace) next to the trained network's own head refitted as a
MAP, judged by calibration and by out-of-distribution detection.

1. A small CNN trained here on Fashion-MNIST (Debian's dataset-fashion-mnist); out-of-distribution
   inputs are handwritten digits (scikit-learn's 8 x 8 digits, enlarged to 28 x 28).
2. A small transformer encoder trained here on token sequences the script makes itself (which of
   three token groups is most frequent); out-of-distribution inputs are sequences of the tokens
   that belong to no group.

Every posterior is uqnn's own method on the head (BNN.from_torch(..., subset="last-layer")): the
features are computed once by the frozen network. Scores come from uqnn.evaluate (accuracy, NLL,
ECE; AUROC of the predictive entropy for OOD detection). Writes bayesian_last_layer_<task>.png and
bayesian_last_layer.md into the current directory.

Run: PYTHONPATH=build/python python3 examples/python/bayesian_last_layer.py [--quick]
"""
import argparse
import gzip
import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn

import uqnn

FASHION = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


def read_idx(name):
    with gzip.open(os.path.join(FASHION, name)) as fh:
        data = fh.read()
    if "images" in name:
        return np.frombuffer(data, np.uint8, offset=16).reshape(-1, 1, 28, 28).astype(np.float32) / 255.0
    return np.frombuffer(data, np.uint8, offset=8).astype(np.int64)


def digits_28x28():
    """scikit-learn's handwritten digits (8 x 8, 0..16) enlarged 3x and padded to 28 x 28, in [0, 1]."""
    from sklearn.datasets import load_digits

    d = load_digits().images.astype(np.float32) / 16.0
    big = np.kron(d, np.ones((1, 3, 3), np.float32))
    return np.pad(big, ((0, 0), (2, 2), (2, 2)))[:, None, :, :]


def train(net, X, y, epochs, lr, batch=128, seed=0):
    torch.manual_seed(seed)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    for _ in range(epochs):
        perm = torch.randperm(len(X))
        for i in range(0, len(X), batch):
            idx = perm[i:i + batch]
            opt.zero_grad()
            nn.functional.cross_entropy(net(X[idx]), y[idx]).backward()
            opt.step()
    return net.eval()


def last_layer_posteriors(net, X, y, nuts_settings):
    """MAP, last-layer Laplace and NUTS on the head of `net`, each uqnn's own method on the frozen
    features (computed once per fit)."""
    common = dict(subset="last-layer", progress=False, seed=1, prior_sigma=1.0)
    fits = {}
    for name, method, options in [("MAP", "map", {}),
                                  ("last-layer Laplace", "laplace", {"num_samples": 200}),
                                  ("last-layer NUTS", "nuts", nuts_settings)]:
        t = time.time()
        fits[name] = uqnn.BNNClassifier.from_torch(net, method=method, **common, **options).fit(X, y)
        print(f"  {name}: {time.time() - t:.1f} s")
    return fits


def confidence_and_entropy(est, X):
    p = est.predict_proba(X)
    return p.max(axis=1), -(p * np.log(np.clip(p, 1e-300, None))).sum(axis=1), p


def report(task, fits, X_test, y_test, X_ood, title):
    rows = []
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    bins = np.linspace(0, 1, 11)
    for name, est in fits.items():
        m = uqnn.evaluate(est, X_test, y_test, ood_X=X_ood, figures=False)
        auroc = m["ood"]["predictive_entropy"]["auroc"] if "ood" in m else float("nan")
        rows.append((name, m["accuracy"], m["nll"], m["ece"], auroc))
        conf, _, p = confidence_and_entropy(est, X_test)
        correct = (p.argmax(axis=1) == y_test)
        which = np.digitize(conf, bins[1:-1])
        acc = [correct[which == b].mean() if np.any(which == b) else np.nan for b in range(len(bins) - 1)]
        axes[0].plot(0.5 * (bins[1:] + bins[:-1]), acc, "o-", label=name)
        _, h_in, _ = confidence_and_entropy(est, X_test)
        _, h_out, _ = confidence_and_entropy(est, X_ood)
        color = axes[0].lines[-1].get_color()
        for h, style, where in ((h_in, "-", "test"), (h_out, "--", "OOD")):
            h = np.sort(np.maximum(h, 1e-6))
            axes[1].plot(h, np.arange(1, len(h) + 1) / len(h), style, color=color, label=f"{name}: {where}")
    axes[0].plot([0, 1], [0, 1], "k:", lw=1)
    axes[0].set_xlabel("confidence (max predictive probability)"), axes[0].set_ylabel("accuracy")
    axes[0].set_title("reliability on the test set (10 bins)"), axes[0].legend(fontsize=8)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("predictive entropy (nats; values below 1e-6 shown at 1e-6)"), axes[1].set_ylabel("fraction of inputs below")
    axes[1].set_title("predictive entropy: test (solid) vs out-of-distribution (dashed)"), axes[1].legend(fontsize=7)
    fig.suptitle(title)
    fig.savefig(f"bayesian_last_layer_{task}.png", dpi=110, bbox_inches="tight")
    lines = [f"### {title}", "", "| head | accuracy | NLL | ECE | OOD AUROC (entropy) |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {n} | {a:.3f} | {nll:.3f} | {e:.3f} | {r:.3f} |" for n, a, nll, e, r in rows]
    print("\n".join(lines))
    return lines


def fashion_cnn(quick):
    X, y = read_idx("train-images-idx3-ubyte.gz"), read_idx("train-labels-idx1-ubyte.gz")
    Xt, yt = read_idx("t10k-images-idx3-ubyte.gz"), read_idx("t10k-labels-idx1-ubyte.gz")
    n_train, n_head, n_test = (4000, 1000, 1000) if quick else (20000, 3000, 2000)
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10))
    t = time.time()
    train(cnn, X[:n_train], y[:n_train], epochs=2 if quick else 4, lr=1e-3)
    print(f"Fashion-MNIST CNN trained in {time.time() - t:.0f} s")
    nuts = {"chains": 2, "warmup": 100 if quick else 300, "draws": 100 if quick else 300, "max_depth": 8}
    fits = last_layer_posteriors(cnn, X[n_train:n_train + n_head], y[n_train:n_train + n_head], nuts)
    ood = digits_28x28()[:n_test]
    return report("fashion_mnist", fits, Xt[:n_test], yt[:n_test], ood,
                  f"Fashion-MNIST CNN, its last layer (650 weights) on {n_head} images; OOD: handwritten digits")


class TinyTransformer(nn.Module):
    def __init__(self, vocab=10, length=16, width=32, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Parameter(0.1 * torch.randn(length, width))
        self.encoder = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(width, classes)

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens.long()) + self.position)
        return self.head(h.mean(dim=1))


def token_sequences(n, rng, groups=((0, 1, 2), (3, 4, 5), (6, 7)), length=16, label_noise=0.15):
    """Sequences whose label is the group with the most tokens (ties broken towards the first),
    replaced by a random label with probability `label_noise` (so that calibration matters)."""
    tokens = rng.integers(0, 10, size=(n, length))
    counts = np.stack([np.isin(tokens, g).sum(axis=1) for g in groups], axis=1)
    labels = counts.argmax(axis=1)
    noisy = rng.uniform(size=n) < label_noise
    labels[noisy] = rng.integers(0, len(groups), size=int(noisy.sum()))
    return tokens.astype(np.float32), labels


def transformer(quick):
    rng = np.random.default_rng(0)
    X, y = token_sequences(6000, rng)
    Xt, yt = token_sequences(1000, rng)
    ood = rng.integers(8, 10, size=(1000, 16)).astype(np.float32)  # tokens 8 and 9 belong to no group
    torch.manual_seed(0)
    net = TinyTransformer()
    t = time.time()
    train(net, X[:4000], y[:4000], epochs=5 if quick else 20, lr=3e-3)
    print(f"transformer trained in {time.time() - t:.0f} s")
    nuts = {"chains": 2, "warmup": 100 if quick else 500, "draws": 100 if quick else 500, "max_depth": 8}
    fits = last_layer_posteriors(net, X[4000:5000], y[4000:5000], nuts)
    return report("transformer", fits, Xt, yt, ood,
                  "Transformer encoder on token sequences (15% random labels), its last layer (99 weights) on 1000 sequences; "
                  "OOD: ungrouped tokens")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller data and shorter chains")
    args = parser.parse_args()
    torch.set_num_threads(2)
    lines = fashion_cnn(args.quick) + [""] + transformer(args.quick)
    with open("bayesian_last_layer.md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
