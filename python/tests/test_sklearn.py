"""uqnn.BNNRegressor and uqnn.BNNClassifier as scikit-learn estimators: scikit-learn's own estimator
checks, and the estimators inside Pipeline, GridSearchCV and cross_val_score."""
import pickle
import warnings

import numpy as np
import pytest

import uqnn

sklearn = pytest.importorskip("sklearn", reason="scikit-learn is Debian's python3-sklearn (scripts/install-deps)")
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils import estimator_checks  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

# The estimators as users make them, with their defaults (method map: a few milliseconds per fit
# on the checks' data sets), only without a progress bar.
ESTIMATORS = [uqnn.BNNRegressor(progress=False), uqnn.BNNClassifier(progress=False)]

# Checks skipped, each with its reason. None: every check scikit-learn runs passes.
SKIPPED: dict[str, str] = {}


def _check_name(check) -> str:
    return getattr(check, "func", check).__name__


@parametrize_with_checks(ESTIMATORS)
def test_scikit_learn_estimator_checks(estimator, check):
    reason = SKIPPED.get(_check_name(check))
    if reason:
        pytest.skip(reason)
    check(estimator)


# Checks that scikit-learn 1.2 runs only on its own estimators (later versions run them in
# check_estimator too): n_features_in_ checked by every method, and feature_names_in_ with
# scikit-learn's messages for a frame whose columns differ from the fit's.
EXTRA_CHECKS = ["check_n_features_in_after_fitting", "check_dataframe_column_names_consistency"]


@pytest.mark.parametrize("check_name", EXTRA_CHECKS)
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_scikit_learn_extra_checks(estimator, check_name):
    if check_name == "check_dataframe_column_names_consistency":
        pytest.importorskip("pandas")
    getattr(estimator_checks, check_name)(type(estimator).__name__, estimator)


def test_no_check_is_skipped_without_a_reason():
    names = {_check_name(check) for est in ESTIMATORS for check in estimator_checks._yield_all_checks(est)}
    assert set(SKIPPED) <= names, "a skip names a check scikit-learn does not run"
    assert all(reason.strip() for reason in SKIPPED.values())


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(80, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.05 * rng.normal(size=80)
    return X, y


@pytest.fixture(scope="module")
def three_classes():
    rng = np.random.default_rng(2)
    centres = np.array([[0.0, 3.0], [3.0, -2.0], [-3.0, -2.0]])
    labels = np.array(["setosa", "versicolor", "virginica"])
    idx = rng.integers(0, 3, size=150)
    return centres[idx] + rng.normal(size=(150, 2)), labels[idx]


def test_get_params_holds_the_method_options_and_clone_keeps_them():
    est = uqnn.BNNRegressor(method="ens", ens_members=3, epochs=20)
    params = est.get_params()
    assert params["method_options"] == {"ens_members": 3, "epochs": 20}
    assert "ens_members" not in params  # a method option is not a parameter of its own
    copy = clone(est)
    assert copy.get_params()["method_options"] == {"ens_members": 3, "epochs": 20}
    # set_params: a parameter, or a method option that joins method_options
    copy.set_params(seed=3, epochs=40)
    assert copy.seed == 3 and copy.method_options == {"ens_members": 3, "epochs": 40}
    assert est.method_options == {"ens_members": 3, "epochs": 20}  # the original is untouched
    # the plain estimator too, as docs/python.md shows it
    bnn = uqnn.BNN(method="ens", ens_members=5)
    assert bnn.get_params()["method_options"] == {"ens_members": 5}
    assert clone(bnn).method_options == {"ens_members": 5}


def test_options_are_checked_at_fit_not_at_construction(regression):
    X, y = regression
    est = uqnn.BNNRegressor(chains=0, method="nuts")  # scikit-learn's rule: __init__ only stores
    with pytest.raises(ValueError, match=r"chains: 0 is invalid: it must be an integer >= 1"):
        est.fit(X, y)
    with pytest.raises(ValueError, match="is a classifier's"):
        uqnn.BNNRegressor(likelihood="bernoulli").fit(X, y)
    with pytest.raises(ValueError, match="method_options: expected a dict"):
        uqnn.BNNRegressor(method_options=[("epochs", 3)]).fit(X, y)


def test_pipeline_scales_then_fits(regression):
    X, y = regression
    pipe = Pipeline([("scale", StandardScaler()), ("bnn", uqnn.BNNRegressor(standardize=False, progress=False))])
    pipe.fit(X * 100.0, y)
    assert pipe.score(X * 100.0, y) > 0.9
    # the step's parameters and method options through the pipeline's names
    pipe.set_params(bnn__hidden=(4,), bnn__epochs=30)
    assert pipe.named_steps["bnn"].hidden == (4,) and pipe.named_steps["bnn"].method_options == {"epochs": 30}
    pipe.fit(X * 100.0, y)
    assert len(pipe.named_steps["bnn"].param_names) == 3 * 4 + 4 + 4 + 1 + 1  # the 3-4-1 MLP, then log sigma


def test_grid_search_picks_the_better_network(regression):
    X, y = regression
    # A network of one tanh unit cannot follow sin(x0) + x1 / 2 as well as one of (10, 10) can.
    grid = GridSearchCV(uqnn.BNNRegressor(progress=False), {"hidden": [(1,), (10, 10)], "epochs": [200]}, cv=3)
    grid.fit(X, y)
    assert grid.best_params_["hidden"] == (10, 10)
    assert grid.best_estimator_.method_options == {"epochs": 200}
    scores = grid.cv_results_["mean_test_score"]
    assert scores[1] > scores[0]


def test_cross_val_score_of_a_classifier_with_string_labels(three_classes):
    X, y = three_classes
    scores = cross_val_score(uqnn.BNNClassifier(progress=False), X, y, cv=KFold(3, shuffle=True, random_state=0))
    assert scores.shape == (3,)
    assert np.all(scores > 0.85)  # well separated blobs


def test_classifier_labels_probabilities_and_refit(three_classes):
    X, y = three_classes
    clf = uqnn.BNNClassifier(progress=False).fit(X, y)
    assert list(clf.classes_) == ["setosa", "versicolor", "virginica"]
    p = clf.predict_proba(X)
    assert p.shape == (150, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[p.argmax(axis=1)])
    assert clf.metrics_["info"] is not None and clf.n_features_in_ == 2
    # two classes: bernoulli, the probability of classes_[1] in column 1
    two = y != "virginica"
    binary = uqnn.BNNClassifier(progress=False).fit(X[two], y[two])
    pb = binary.predict_proba(X[two])
    assert pb.shape == (two.sum(), 2)
    np.testing.assert_allclose(pb[:, 1], binary._fitted.predict(X[two], [], 0)["mean"][:, 0], rtol=1e-12)
    assert binary.score(X[two], y[two]) > 0.95
    m = binary.metrics(X[two], y[two])  # labels, mapped to the fit's class indices
    assert m["accuracy"] == pytest.approx(binary.score(X[two], y[two]), rel=1e-12)


def test_a_fitted_estimator_pickles_with_its_run(regression):
    X, y = regression
    est = uqnn.BNNRegressor(hidden=(5,), method="ens", ens_members=2, epochs=50, progress=False).fit(X, y)
    copy = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(copy.predict(X), est.predict(X))
    np.testing.assert_array_equal(copy.draws, est.draws)
    assert copy._dir != est._dir  # its own copy of the run's files


def test_predict_checks_the_number_of_features(regression):
    X, y = regression
    est = uqnn.BNNRegressor(progress=False).fit(X, y)
    with pytest.raises(ValueError, match="X has 2 features, but BNNRegressor is expecting 3 features as input"):
        est.predict(X[:, :2])
    with pytest.raises(ValueError, match="2D array"):
        est.predict(X[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.predict(X)  # numpy in, numpy fitted: no warning
