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

