"""uqnn.evaluate against scikit-learn and properscoring's formulas, and on a fitted BNN."""
import json
import math
import os

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import average_precision_score, brier_score_loss, roc_auc_score

import uqnn


def _csv(path, **columns):
    names = list(columns)
    np.savetxt(path, np.column_stack([columns[n] for n in names]), delimiter=",", header=",".join(names), comments="", fmt="%.17g")
    return path


def test_gaussian_predictions_match_properscoring_crps(tmp_path):
    rng = np.random.default_rng(1)
    mean, sd, y = rng.normal(size=50), rng.uniform(0.3, 2, size=50), rng.normal(size=50)
    m = uqnn.evaluate(predictions=_csv(tmp_path / "p.csv", mean=mean, sd=sd, y=y), out=tmp_path / "ev", figures=False)
    z = (y - mean) / sd  # properscoring.crps_gaussian, written out
    crps = sd * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi))
    assert m["crps"] == pytest.approx(crps.mean(), rel=1e-12)
    assert m["nll"] == pytest.approx(-stats.norm.logpdf(y, mean, sd).mean(), rel=1e-12)
    assert m["rmse"] == pytest.approx(np.sqrt(np.mean((y - mean) ** 2)), rel=1e-12)
    assert json.load(open(tmp_path / "ev" / "metrics.json"))["crps"] == m["crps"]


def test_class_probabilities_and_ood_match_scikit_learn(tmp_path):
    rng = np.random.default_rng(2)
    p1 = rng.uniform(size=80)
    labels = (rng.uniform(size=80) < p1).astype(int)
    ood_p1 = np.clip(0.5 + 0.2 * rng.normal(size=40), 0.01, 0.99)
    m = uqnn.evaluate(predictions=_csv(tmp_path / "p.csv", prob_0=1 - p1, prob_1=p1, y=labels),
                      ood_predictions=_csv(tmp_path / "o.csv", prob_0=1 - ood_p1, prob_1=ood_p1), out=tmp_path / "ev", figures=False)
    # Two classes: the sum over classes is twice scikit-learn's (p - y)^2.
    assert m["brier"] == pytest.approx(2 * brier_score_loss(labels, p1), rel=1e-12)
    entropy = lambda p: -(p * np.log(p) + (1 - p) * np.log(1 - p))
    scores = np.r_[entropy(p1), entropy(ood_p1)]
    is_ood = np.r_[np.zeros(80), np.ones(40)]
    assert m["ood"]["predictive_entropy"]["auroc"] == pytest.approx(roc_auc_score(is_ood, scores), rel=1e-12)
    assert m["ood"]["predictive_entropy"]["aupr"] == pytest.approx(average_precision_score(is_ood, scores), rel=1e-12)
    assert m["ood"]["mutual_information"]["auroc"] == 0.5  # one set of probabilities: MI is 0 everywhere


def test_a_fitted_bnn_with_split_conformal(tmp_path, sine):
    X, y = sine
    est = uqnn.BNN(hidden=(8,), method="ens", ens_members=2, epochs=60, progress=False, out=str(tmp_path / "run")).fit(X, y)
    m = uqnn.evaluate(est, X, y, conformal="split", calibration_fraction=0.5, out=tmp_path / "ev", seed=3)
    assert m["task"] == "regression" and m["predictive_form"] == "mixture"
    assert m["n"] == 30 and m["conformal"]["calibration_rows"] == 30
    assert os.path.exists(tmp_path / "ev" / "calibration.png") and os.path.exists(tmp_path / "ev" / "conformal.png")
    # The 90% conformal quantile is the ceil(31 x 0.9) = 28th of the 30 normalised calibration residuals.
    assert math.isfinite(m["conformal"]["levels"]["0.9"]["quantile"])
    with pytest.raises(ValueError, match="calibration-fraction"):
        uqnn.evaluate(est, X, y, conformal="split", out=tmp_path / "ev2")


def test_conformal_fit_gives_intervals_and_sets(tmp_path):
    # BNN(conformal=...): calibrated at fit time, model.json records the quantile, and
    # predict_conformal gives mean +- q sd (split) or boolean class sets (aps).
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, size=(200, 1))
    y = np.sin(X[:, 0]) + (0.1 + 0.3 * np.abs(X[:, 0])) * rng.normal(size=200)
    est = uqnn.BNNRegressor(hidden=(8,), method="map", conformal="split", calibration_fraction=0.3, confidence_level=0.8,
                            epochs=200, out=tmp_path / "reg")
    est.fit(X, y)
    q = json.load(open(tmp_path / "reg" / "model.json"))["conformal"]["quantiles"][0]
    lower, upper = est.predict_conformal(X[:5])
    mean, sd = est.predict(X[:5], return_std=True)
    np.testing.assert_allclose(lower, mean - q * sd, rtol=1e-10)
    np.testing.assert_allclose(upper, mean + q * sd, rtol=1e-10)
    with pytest.raises(ValueError, match="not calibrated"):
        uqnn.BNNRegressor(hidden=(4,), method="map", epochs=5).fit(X, y).predict_conformal(X)
    labels = (X[:, 0] + 0.5 * rng.normal(size=200) > 0).astype(int)
    clf = uqnn.BNNClassifier(hidden=(4,), method="map", conformal="aps", calibration_fraction=0.3, epochs=100)
    sets = clf.fit(X, labels).predict_conformal(X)
    assert sets.dtype == bool and sets.shape == (200, 2)
    assert sets.any(axis=1).all()  # conservative sets are never empty


def test_cv_plus_fit_gives_the_intervals_of_its_predictions_file(tmp_path):
    # BNN(conformal="cv+"): no calibration rows; model.json keeps one out-of-fold residual per
    # training row, and predict_conformal gives the intervals predictions.csv has for the same rows.
    rng = np.random.default_rng(5)
    X = rng.uniform(-3, 3, size=(100, 1))
    y = np.sin(X[:, 0]) + (0.1 + 0.3 * np.abs(X[:, 0])) * rng.normal(size=100)
    est = uqnn.BNNRegressor(hidden=(8,), method="ens", ens_members=4, noise=0.3, epochs=100, conformal="cv+", test_fraction=0.2,
                            progress=False, out=tmp_path / "cv")
    est.fit(X, y)
    cal = json.load(open(tmp_path / "cv" / "model.json"))["conformal"]
    assert cal["method"] == "cv+" and cal["num_folds"] == 4
    assert len(cal["folds"]) == 80 and len(cal["residuals"][0]) == 80
    table = np.genfromtxt(tmp_path / "cv" / "predictions.csv", delimiter=",", names=True, dtype=None, encoding="utf-8")
    lower, upper = est.predict_conformal(table["x0"].reshape(-1, 1))
    np.testing.assert_allclose(lower, table["y_conformal_lower"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(upper, table["y_conformal_upper"], rtol=1e-9, atol=1e-12)
    assert (upper > lower).all()
    with pytest.raises(ValueError, match="ens, rms"):
        uqnn.BNNRegressor(hidden=(4,), method="map", conformal="cv+", epochs=5, progress=False).fit(X, y)
