"""Image data and out-of-distribution scores from Python: a CNN classifier on the 8 x 8 digits that
ship in data/digits (IDX files), with OOD inputs passed to fit (metrics_["ood"]) and to metrics, the
same numbers as `uqnn fit --ood-data` writes."""
import gzip
import os

import numpy as np
import pytest

import uqnn

DIGITS = os.path.join(os.path.dirname(__file__), "..", "..", "data", "digits")


def read_idx(name):
    """An unsigned-byte IDX file of data/digits as a NumPy array (the format: LeCun et al.)."""
    b = gzip.open(os.path.join(DIGITS, name)).read()
    assert b[:3] == b"\0\0\x08"
    dims = [int.from_bytes(b[4 + 4 * k:8 + 4 * k], "big") for k in range(b[3])]
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * len(dims)).reshape(dims).astype(float)


@pytest.fixture(scope="module")
def digits():
    X = read_idx("train-images-idx3-ubyte.gz").reshape(-1, 64) / 16
    y = read_idx("train-labels-idx1-ubyte.gz").astype(int)
    Xt = read_idx("test-images-idx3-ubyte.gz").reshape(-1, 64) / 16
    yt = read_idx("test-labels-idx1-ubyte.gz").astype(int)
    # Out of distribution: the test digits with their pixels scrambled by one fixed permutation.
    scrambled = Xt[:200, (np.arange(64) * 37 + 11) % 64]
    return X, y, Xt, yt, scrambled


CNN = dict(model="cnn", layers="conv8k3p1,pool2,fc32", input_shape=[1, 8, 8], activation="relu", standardize=False,
           optimizer="adam", lr=3e-3, epochs=20, batch_size=64, progress=False)


def test_fit_and_metrics_report_ood_scores(digits, tmp_path):
    X, y, Xt, yt, scrambled = digits
    clf = uqnn.BNNClassifier(method="ens", method_options={"ens_members": 3}, **CNN)
    clf.fit(X, y, ood_X=scrambled)
    ood = clf.metrics_["ood"]
    assert ood["in_distribution"] == "train" and ood["ood_rows"] == 200
    assert ood["predictive_entropy"]["auroc"] > 0.8
    m = clf.metrics(Xt, yt, ood_X=scrambled)
    assert m["accuracy"] > 0.9
    assert set(m["ood"]) >= {"predictive_entropy", "mutual_information", "max_probability"}
    assert m["ood"]["predictive_entropy"]["auroc"] > 0.8
    assert m["ood"]["mutual_information"]["auroc"] > 0.7
    # The same scores as uqnn.evaluate's (one implementation in C++).
    e = uqnn.evaluate(clf, Xt, yt, ood_X=scrambled, figures=False, out=tmp_path / "evaluation")
    for key in ("predictive_entropy", "mutual_information", "max_probability"):
        assert m["ood"][key]["auroc"] == pytest.approx(e["ood"][key]["auroc"], abs=1e-12)


def test_ood_inputs_are_checked(digits):
    X, y, Xt, yt, scrambled = digits
    clf = uqnn.BNNClassifier(method="map", **{**CNN, "epochs": 1})
    with pytest.raises(ValueError, match="ood_X has 10 columns, X has 64"):
        clf.fit(X, y, ood_X=scrambled[:, :10])
    reg = uqnn.BNNRegressor(hidden=[4], epochs=1, progress=False).fit(X[:50, :3], X[:50, 3])
    with pytest.raises(ValueError, match="class probabilities"):
        reg.metrics(X[:50, :3], X[:50, 3], ood_X=X[:20, :3])


# -- every method on a CNN ------------------------------------------------------------------------
# A small CNN (conv4k3, pool2, fc16, then the output layer: 802 parameters) on 300 training digits,
# scored on the 360 test digits. Each method runs at its defaults, except where a default would
# take minutes: the SG-MCMC step size (required, no default), and NUTS/HMC, which run 2 chains of
# 100 + 100 iterations (tree depth <= 6) on a smaller CNN (conv2k3, pool2: 210 parameters).
SMALL = dict(model="cnn", input_shape=[1, 8, 8], activation="relu", standardize=False, progress=False)
METHODS = {
    "map": {},
    "ens": {},
    "rms": {},
    "sgld": {"step_size": 1e-4},
    "sghmc": {"step_size": 1e-4},
    "psgld": {"step_size": 1e-4},
    "vi": {},
    "swag": {},
    "dropout": {},
    "laplace": {},
    "laplace-last-layer": {"laplace_subset": "last-layer"},
    "nuts": {"chains": 2, "warmup": 100, "draws": 100, "max_depth": 6},
    "hmc": {"chains": 2, "warmup": 100, "draws": 100},
}
SMALLER = {"nuts", "hmc"}


@pytest.fixture(scope="module")
def digits300(digits):
    X, y, Xt, yt, scrambled = digits
    return X[:300], y[:300], Xt, yt, scrambled


def fit_cnn(name, data):
    X, y = data[0], data[1]
    method = "laplace" if name.startswith("laplace") else name
    layers = "conv2k3,pool2" if name in SMALLER else "conv4k3,pool2,fc16"
    clf = uqnn.BNNClassifier(method=method, layers=layers, method_options=METHODS[name] or None, **SMALL)
    return clf.fit(X, y)


@pytest.fixture(scope="module")
def map_fit(digits300):
    return fit_cnn("map", digits300)


# Too slow for CI at these defaults (SG-MCMC's 4 chains x 2000 full-batch steps, about 25 s each on
# the loaded 2-core host; NUTS and HMC): run with UQNN_SLOW_TESTS=1. The others (about 35 s together)
# run in CI.
SLOW = pytest.mark.skipif(not os.environ.get("UQNN_SLOW_TESTS"), reason="every method at its defaults: set UQNN_SLOW_TESTS=1")
SLOW_METHODS = {"sgld", "sghmc", "psgld", "nuts", "hmc", "laplace"}
# The Laplace approximation (full, at its defaults) is underconfident on this CNN: test NLL 1.07 and
# ECE 0.44 against the MAP network's NLL 0.49 (kron and diag are alike; docs/networks.md, "Laplace on
# a small CNN": the marginal likelihood leaves it too wide, and --laplace-tune-by validation, which
# needs validation rows, brings it back to the MAP's NLL).
LAPLACE_UNDERCONFIDENT = pytest.mark.xfail(strict=True, reason="Laplace at its defaults is underconfident on a CNN (NLL 1.07 vs MAP 0.49)")


def method_param(name):
    marks = ([SLOW] if name in SLOW_METHODS else []) + ([LAPLACE_UNDERCONFIDENT] if name == "laplace" else [])
    return pytest.param(name, marks=marks)


@pytest.mark.parametrize("name", [method_param(n) for n in sorted(METHODS)])
def test_every_method_fits_a_cnn_at_its_defaults(name, digits300, map_fit):
    X, y, Xt, yt, scrambled = digits300
    clf = map_fit if name == "map" else fit_cnn(name, digits300)
    m = clf.metrics(Xt, yt, ood_X=scrambled)
    p = clf.predict_proba(Xt)
    assert np.isfinite(p).all() and np.allclose(p.sum(axis=1), 1)
    # 300 training digits: a CNN classifies the held-out ones far above chance (0.1).
    assert m["accuracy"] > (0.6 if name in SMALLER else 0.8), m
    # A posterior predictive is no worse calibrated than the MAP network's point predictions (an
    # NLL of log 10 = 2.3 is a uniform guess).
    assert m["nll"] < max(0.8, 1.25 * map_fit.metrics(Xt, yt)["nll"]), m
    draws = clf.draws.reshape(-1, clf.draws.shape[-1])
    assert np.isfinite(draws).all()
    if name != "map":
        assert draws.shape[0] > 1 and draws.std(axis=0).max() > 0, "the draws differ"
        assert m["ood"]["predictive_entropy"]["auroc"] > 0.6, m["ood"]
