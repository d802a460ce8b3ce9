"""uqnn.BNN: fit, predictions, draws, diagnostics, options, files."""
import json
import os
import subprocess

import numpy as np
import pytest

import uqnn
from uqnn import _core

SHORT = dict(chains=2, warmup=100, draws=100)


@pytest.fixture(scope="module")
def nuts_fit(sine):
    X, y = sine
    return uqnn.BNN(hidden=(8,), activation="tanh", method="nuts", progress=False, **SHORT).fit(X, y)


def test_nuts_fit_predicts_the_sine(nuts_fit, sine):
    X, y = sine
    mean, sd = nuts_fit.predict(X, return_std=True)
    assert mean.shape == (60,) and sd.shape == (60,)
    assert np.sqrt(np.mean((mean - np.sin(X[:, 0])) ** 2)) < 0.1
    # the noise (0.1) is learned: the predictive sd is about it, not far off
    assert 0.05 < np.median(sd) < 0.3
    lo, hi = nuts_fit.predict_interval(X, level=0.95)
    assert np.all(lo < mean) and np.all(mean < hi)
    assert 0.85 <= np.mean((y >= lo) & (y <= hi)) <= 1.0


def test_draws_shape_and_names(nuts_fit):
    d = nuts_fit.draws
    assert d.shape == (2, 100, len(nuts_fit.param_names))
    # 1-8-1 MLP: 8 + 8 + 8 + 1 weights, then the learned noise
    assert len(nuts_fit.param_names) == 26
    assert nuts_fit.param_names[0] == "layer1.weight[0,0]" and nuts_fit.param_names[-1] == "likelihood.log_sigma[0]"


def test_diagnostics_has_arviz_columns(nuts_fit):
    df = nuts_fit.diagnostics()
    assert list(df.columns) == ["mean", "sd", "hdi_3%", "hdi_97%", "mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat"]
    assert list(df.index) == nuts_fit.param_names
    draws = nuts_fit.draws.reshape(-1, nuts_fit.draws.shape[2])
    np.testing.assert_allclose(df["mean"].to_numpy(), draws.mean(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(df["sd"].to_numpy(), draws.std(axis=0, ddof=1), rtol=1e-10)


def test_sample_predictive_matches_the_predictive_moments(nuts_fit, sine):
    X, _ = sine
    s = nuts_fit.sample_predictive(X[:5], n=20000, seed=1)
    assert s.shape == (20000, 5)
    mean, sd = nuts_fit.predict(X[:5], return_std=True)
    np.testing.assert_allclose(s.mean(axis=0), mean, atol=5 * sd.max() / np.sqrt(20000) + 1e-3)
    np.testing.assert_allclose(s.std(axis=0), sd, rtol=0.05)


def test_metrics_agree_with_the_cli_metrics(nuts_fit, sine):
    X, y = sine
    m = nuts_fit.metrics(X, y)
    train = nuts_fit.metrics_["splits"]["train"]
    for key in ("rmse", "lppd"):
        assert m[key] == pytest.approx(train[key], rel=1e-9)
    assert m["nll"] == pytest.approx(train["nll"], rel=1e-9)


def test_same_seed_same_draws_whatever_the_threads(sine):
    X, y = sine
    a = uqnn.BNN(hidden=(4,), method="nuts", threads=1, progress=False, **SHORT).fit(X, y).draws
    b = uqnn.BNN(hidden=(4,), method="nuts", threads=2, progress=False, **SHORT).fit(X, y).draws
    np.testing.assert_array_equal(a, b)


def test_lockstep_chains_same_draws_whatever_the_threads(sine):
    # Batched gradients (one chain per SIMD lane): a chain's draws do not depend on which chains
    # share its thread; they differ to rounding from the unbatched run.
    X, y = sine
    kw = dict(hidden=(4,), method="nuts", lockstep=True, progress=False, **SHORT)
    a = uqnn.BNN(threads=1, **kw).fit(X, y).draws
    b = uqnn.BNN(threads=2, **kw).fit(X, y).draws
    np.testing.assert_array_equal(a, b)
    plain = uqnn.BNN(hidden=(4,), method="nuts", threads=1, progress=False, **SHORT).fit(X, y).draws
    assert a.shape == plain.shape and not np.array_equal(a, plain)


def test_lockstep_sgld_batches_minibatches_and_keeps_the_draws(sine):
    # SGLD's minibatch gradients in lockstep: the same draws whatever the threads, and those of the
    # unbatched run to rounding (the same minibatches, scale and noise).
    X, y = sine
    kw = dict(hidden=(4,), method="sgld", step_size=1e-4, sg_batch_size=8, chain_init="random", chains=4,
              warmup=50, draws=100, progress=False)
    a = uqnn.BNN(threads=1, lockstep=True, **kw).fit(X, y).draws
    b = uqnn.BNN(threads=2, lockstep=True, **kw).fit(X, y).draws
    np.testing.assert_array_equal(a, b)
    plain = uqnn.BNN(threads=1, **kw).fit(X, y).draws
    assert a.shape == plain.shape
    np.testing.assert_allclose(a, plain, rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="lockstep"):
        uqnn.BNN(lockstep=True, **dict(kw, method="fsgld")).fit(X, y)


@pytest.mark.parametrize("method", ["ens", "rms"])
def test_lockstep_ensemble_trains_members_together_and_keeps_their_fits(method, sine):
    # The members of each thread share their gradients' passes: the same fits whatever the threads,
    # and those of training without lockstep to rounding.
    X, y = sine
    kw = dict(hidden=(8,), method=method, ens_members=4, epochs=40, batch_size=8, progress=False)
    fit = uqnn.BNN(threads=1, lockstep=True, **kw).fit(X, y)
    assert fit.metrics_["info"]["lockstep"] is True
    a = fit.draws
    b = uqnn.BNN(threads=2, lockstep=True, **kw).fit(X, y).draws
    np.testing.assert_array_equal(a, b)
    unbatched = uqnn.BNN(threads=1, **kw).fit(X, y)
    assert unbatched.metrics_["info"]["lockstep"] is False
    plain = unbatched.draws
    assert a.shape == plain.shape
    np.testing.assert_allclose(a, plain, rtol=0, atol=1e-9)
    members = a.reshape(-1, a.shape[-1])
    assert members.shape[0] == 4 and np.abs(members[0] - members[1]).max() > 1e-3  # four networks, not one


def test_inputs_numpy_pandas_float32_fortran_agree(sine):
    pd = pytest.importorskip("pandas")
    X, y = sine

    def fit_predict(Xi, yi):
        return uqnn.BNN(hidden=(4,), method="map", epochs=50, progress=False).fit(Xi, yi).predict(X)

    ref = fit_predict(X, y)
    np.testing.assert_array_equal(fit_predict(np.asfortranarray(X), y), ref)
    np.testing.assert_array_equal(fit_predict(pd.DataFrame({"x": X[:, 0]}), pd.Series(y, name="y")), ref)
    # float32 data are the float32 values, exactly
    X32, y32 = X.astype(np.float32), y.astype(np.float32)
    np.testing.assert_array_equal(fit_predict(X32, y32), fit_predict(X32.astype(np.float64), y32.astype(np.float64)))


@pytest.mark.parametrize("method", _core.method_names())
def test_every_method_fits(method, sine):
    X, y = sine
    quick = {"map": dict(epochs=30), "ens": dict(epochs=30, ens_members=2), "rms": dict(epochs=30, ens_members=2),
             "swag": dict(epochs=30), "vi": dict(epochs=30), "laplace": dict(epochs=30, laplace_curvature="ggn", noise=0.1), "dropout": dict(epochs=30),
             "vi-hmc": dict(epochs=30, chains=1, warmup=20, draws=20), "dei-nuts": dict(epochs=30, members=2, warmup=20, draws=20),
             "mclmc": dict(chains=1, warmup=40, draws=20, thin=1), "mile": dict(epochs=30, members=2, warmup=40, draws=20, thin=1),
             "nngp": dict(num_samples=50)}
    opts = dict(quick.get(method, dict(chains=1, warmup=20, draws=20)))
    noise = opts.pop("noise", None)
    if method in ("fsgld", "fsghmc", "sgld", "sghmc", "psgld"):
        opts = dict(chains=1, warmup=20, draws=20, step_size=1e-4)
    est = uqnn.BNN(hidden=(4,), activation="tanh", method=method, noise=noise, progress=False, **opts).fit(X, y)
    mean = est.predict(X)
    assert mean.shape == (60,) and np.all(np.isfinite(mean))
    assert est.draws.ndim == 3 and est.draws.shape[2] == len(est.param_names)


def test_unknown_and_invalid_options_raise_value_error_at_fit(sine):
    # scikit-learn's rule: the constructor stores its parameters, fit checks them.
    X, y = sine
    for kwargs, message in [(dict(chainz=3), "chainz: there is no such option"),
                            (dict(method="nuts", chains=0), r"chains: 0 is invalid: it must be an integer >= 1"),
                            (dict(method="nuts", ens_members=3), "ens_members: does not apply to --method nuts"),
                            (dict(method="nutz"), "method 'nutz' is not known"),
                            (dict(activation="swish"), "activation")]:
        est = uqnn.BNN(progress=False, **kwargs)
        with pytest.raises(ValueError, match=message):
            est.fit(X, y)


def test_options_are_documented_from_the_declarations():
    text = uqnn.BNN.options("ens")
    assert "ens_members" in text and "max_depth" not in text
    default_method = next(o["default"] for g in _core.all_option_groups() for o in g["options"] if o["name"] == "method")
    assert f"Options of the default method ({default_method})" in uqnn.BNN.__doc__
    assert uqnn.BNN.options(default_method) in uqnn.BNN.__doc__


def test_save_load_and_the_cli_read_the_same_files(nuts_fit, sine, tmp_path):
    X, y = sine
    nuts_fit.save(tmp_path / "run")
    loaded = uqnn.load(tmp_path / "run")
    np.testing.assert_array_equal(loaded.draws, nuts_fit.draws)
    np.testing.assert_array_equal(loaded.predict(X), nuts_fit.predict(X))
    # the CLI predicts from the directory Python wrote ...
    cli = os.environ.get("UQNN_CLI")
    if not cli:
        pytest.skip("UQNN_CLI not set (ctest sets it)")
    data = tmp_path / "x.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", header="x0,y", comments="")
    subprocess.run([cli, "predict", "--model", str(tmp_path / "run"), "--data", str(data), "--out", str(tmp_path / "p.csv")],
                   check=True, capture_output=True)
    p = np.genfromtxt(tmp_path / "p.csv", delimiter=",", names=True)
    np.testing.assert_allclose(p["y_mean"], nuts_fit.predict(X), rtol=1e-12)
    # ... and Python loads a directory the CLI wrote
    subprocess.run([cli, "fit", "--data", str(data), "--method", "map", "--epochs", "20", "--arch", "3", "--out",
                    str(tmp_path / "cli"), "--quiet", "--figure", "none"], check=True, capture_output=True)
    from_cli = uqnn.load(tmp_path / "cli")
    assert from_cli.method == "map" and from_cli.draws.shape == (1, 1, 11)
    written = np.genfromtxt(tmp_path / "cli" / "predictions.csv", delimiter=",", names=True)
    np.testing.assert_allclose(from_cli.predict(X), written["y_mean"], rtol=1e-12)


def test_load_refuses_a_draws_file_outside_the_run(nuts_fit, tmp_path):
    nuts_fit.save(tmp_path / "run")
    model = json.loads((tmp_path / "run" / "model.json").read_text())
    model["draws_file"] = "../../etc/passwd"
    (tmp_path / "run" / "model.json").write_text(json.dumps(model))
    with pytest.raises(ValueError, match="plain file name inside the run directory"):
        uqnn.load(tmp_path / "run")


def test_inference_data_groups(nuts_fit, sine):
    az = pytest.importorskip("arviz", reason="arviz is installed by scripts/python-test-env")
    idata = nuts_fit.to_inference_data()
    for g in ("posterior", "sample_stats", "observed_data", "log_likelihood", "posterior_predictive"):
        assert g in idata.groups(), g
    assert idata.posterior["theta"].shape == (2, 100, 26)
    assert {"lp", "acceptance_rate", "diverging", "tree_depth"} <= set(idata.sample_stats.data_vars)
    loo = az.loo(idata)
    # elpd_loo is a sum over points; it is close to n * LPPD for a well-specified fit
    X, y = sine
    assert abs(loo.elpd_loo - 60 * nuts_fit.metrics(X, y)["lppd"]) < 10


@pytest.mark.parametrize("method", ["map", "ens", "nuts"])
def test_classification_metrics_agree_with_the_cli_metrics(method):
    # Two noisy, overlapping classes: accuracy well above a coin, below 1; the metrics of BNN.metrics
    # on the training data are those of the fit's metrics.json.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.7 * rng.normal(size=200) > 0).astype(float)
    options = dict(SHORT) if method == "nuts" else dict(ens_members=3) if method == "ens" else {}
    est = uqnn.BNN(hidden=(6,), activation="tanh", likelihood="bernoulli", method=method, epochs=200, progress=False,
                   **options).fit(X, y)
    m = est.metrics(X, y)
    train = est.metrics_["splits"]["train"]
    for key in ("accuracy", "nll", "lppd", "brier", "ece"):
        assert m[key] == pytest.approx(train[key], rel=1e-12), key
    assert 0.75 < m["accuracy"] < 1.0
    assert m["nll"] < np.log(2)
    p = est.predict(X)
    assert p.shape == (200,) and np.all((p >= 0) & (p <= 1))


@pytest.mark.parametrize("prior", ["horseshoe", "regularized-horseshoe", "ard"])
def test_shrinkage_priors_fit_and_give_the_network_weights(prior, sine):
    X, y = sine
    est = uqnn.BNN(hidden=(4,), activation="tanh", prior=prior, method="nuts", progress=False, chains=1, warmup=50,
                   draws=20).fit(X, y)
    names = est.param_names
    assert "layer1.weight_raw[0,0]" in names and "layer1.weight[0,0]" not in names
    f = est._fitted
    w = f.network_weights
    assert w.shape == (20, 13)  # the 1-4-1 network's own weights, not its non-centred parameters
    d = est.draws[0]
    z = d[:, names.index("layer1.weight_raw[0,0]")]
    if prior == "ard":
        scale = np.exp(d[:, names.index("layer1.weight.log_scale[0]")])
    else:  # per weight: w = z tau lambda (layer 1's fan-in is 1); the regularized one tempers lambda by c
        tau = np.exp(d[:, names.index("layer1.weight.log_tau[0]")])
        lam = np.exp(d[:, names.index("layer1.weight.log_lambda[0]")])
        if prior == "regularized-horseshoe":
            c2 = np.exp(2 * d[:, names.index("log_c[0]")])
            lam = np.sqrt(c2 * lam**2 / (c2 + tau**2 * lam**2))
        scale = tau * lam
    np.testing.assert_allclose(w[:, 0], z * scale, rtol=1e-12)
    np.testing.assert_allclose(w[:, 4], d[:, names.index("layer1.bias[0]")])  # biases are themselves
    assert np.all(np.isfinite(est.predict(X)))


def test_flow_vi_fits_and_records_its_family(sine):
    X, y = sine
    est = uqnn.BNN(hidden=(4,), activation="tanh", method="vi", vi_family="flow", vi_flow_epochs=200, vi_flow_layers=2,
                   progress=False).fit(X, y)
    assert est.metrics_["info"]["family"] == "flow" and est.metrics_["info"]["flow"]["coupling_layers"] == 2
    assert np.all(np.isfinite(est.predict(X)))
    with pytest.raises(ValueError, match="vi_family"):
        uqnn.BNN(method="vi", vi_family="realnvp", progress=False).fit(X, y)


def test_acquisition_scores_rank_far_points_first(nuts_fit):
    X = np.array([[0.0], [1.0], [8.0]])  # inside the data, inside, far outside [-3, 3]
    bald = nuts_fit.acquisition(X, "bald")
    var = nuts_fit.acquisition(X, "max-variance")
    assert bald.shape == (3,) and var.shape == (3,)
    assert bald[2] > max(bald[:2]) and var[2] > max(var[:2])
    # max-variance is the square of predict's epistemic sd (the draws' means' spread), in y's units
    f = nuts_fit._fitted
    mu = np.array([f.predict(X[i:i + 1], [], 0)["epistemic_sd"][0] ** 2 for i in range(3)]).ravel()
    np.testing.assert_allclose(var, mu, rtol=1e-9)
    with pytest.raises(ValueError, match="strategy"):
        nuts_fit.acquisition(X, "entropy")


def test_a_stopped_chain_run_resumes_from_its_checkpoint_bitwise(sine, tmp_path):
    import signal
    import threading
    import time

    X, y = sine
    kw = dict(hidden=(5,), activation="tanh", method="nuts", progress=False, chains=2, warmup=100, draws=1500,
              chain_init="random", seed=4)
    uqnn.BNN(out=tmp_path / "ref", **kw).fit(X, y)
    run = tmp_path / "run"

    done = threading.Event()

    def stop_after_the_first_checkpoint():
        for _ in range(1200):
            if (run / "checkpoint" / "chain-0.state").exists():
                os.kill(os.getpid(), signal.SIGINT)
                return
            if done.wait(0.05):
                return

    watcher = threading.Thread(target=stop_after_the_first_checkpoint)
    watcher.start()
    try:
        with pytest.raises(uqnn.Interrupted):
            uqnn.BNN(out=run, checkpoint_every=200, **kw).fit(X, y)
    finally:
        done.set()
        watcher.join()
    assert (run / "checkpoint" / "fit.json").exists()
    # Other data, or other settings, are not the stopped run.
    with pytest.raises(ValueError, match="training data differ"):
        uqnn.BNN(out=run, **kw).fit(X, y + 1.0, resume=True)
    with pytest.raises(ValueError, match="was started with draws = 1500"):
        uqnn.BNN(out=run, **{**kw, "draws": 1000}).fit(X, y, resume=True)
    resumed = uqnn.BNN(out=run, threads=1, **kw).fit(X, y, resume=True)
    assert resumed.metrics_["info"]["resumed_at_iteration"][0] >= 200
    for name in ("draws.csv", "predictions.csv"):
        assert (run / name).read_bytes() == (tmp_path / "ref" / name).read_bytes(), name
    assert not (run / "checkpoint").exists()
    with pytest.raises(ValueError, match="resume=True needs the out directory"):
        uqnn.BNN(**kw).fit(X, y, resume=True)


@pytest.mark.parametrize("value, kind", [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_fit_refuses_nan_and_inf_naming_row_and_column(value, kind, sine):
    X, y = sine
    X2 = np.column_stack([X, X ** 2])
    X2[7, 1] = value
    with pytest.raises(ValueError, match=rf"X contains {kind} at row 7, column 1 \('x1'\)"):
        uqnn.BNN(hidden=(3,), progress=False).fit(X2, y)
    y2 = y.copy()
    y2[4] = value
    y2[9] = value
    with pytest.raises(ValueError, match=rf"y contains {kind} at row 4, column 0 \('y'\), and 1 more"):
        uqnn.BNN(hidden=(3,), progress=False).fit(X, y2)


def test_fit_names_a_frame_column_holding_nan(sine):
    pd = pytest.importorskip("pandas")
    X, y = sine
    frame = pd.DataFrame({"depth": X[:, 0], "speed": X[:, 0] ** 2})
    frame.loc[12, "speed"] = np.nan
    with pytest.raises(ValueError, match=r"X contains NaN at row 12, column 1 \('speed'\)"):
        uqnn.BNN(hidden=(3,), progress=False).fit(frame, y)


def test_predict_refuses_nan_naming_row_and_column(sine):
    X, y = sine
    est = uqnn.BNN(hidden=(3,), progress=False).fit(X, y)
    Xq = np.array([[0.0], [1.0], [np.nan], [2.0]])
    for call in (est.predict, est.predict_interval, est.sample_predictive, est.acquisition):
        with pytest.raises(ValueError, match=r"X contains NaN at row 2, column 0"):
            call(Xq)
    assert np.all(np.isfinite(est.predict(Xq[[0, 1, 3]])))


def test_to_inference_data_without_arviz_says_how_to_install_it(nuts_fit, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "arviz", None)  # import arviz now raises ImportError
    with pytest.raises(ImportError, match=r"pip install arviz"):
        nuts_fit.to_inference_data()
    r = uqnn.sample(lambda x: (-0.5 * float(x @ x), -x), np.zeros(2), chains=1, warmup=20, draws=20, progress=False)
    with pytest.raises(ImportError, match=r"ArviZ.*pip install arviz"):
        r.to_inference_data()


def test_the_estimators_work_without_scikit_learn():
    # scikit-learn is optional: without it the estimators stand on uqnn's small base classes.
    import subprocess
    import sys

    code = """
import sys
sys.modules["sklearn"] = None  # import sklearn now raises ImportError
import numpy as np, uqnn
from uqnn import _sklearn_compat
assert not _sklearn_compat.HAVE_SKLEARN
rng = np.random.default_rng(0)
X = rng.normal(size=(40, 2))
y = X[:, 0] - X[:, 1]
reg = uqnn.BNNRegressor(progress=False, epochs=300)
assert reg.get_params()["method_options"] == {"epochs": 300}
reg.set_params(hidden=(5,), lr=0.01)
assert reg.hidden == (5,) and reg.method_options == {"epochs": 300, "lr": 0.01}
assert reg.fit(X, y).score(X, y) > 0.9
labels = np.where(y > 0, "a", "b")
clf = uqnn.BNNClassifier(progress=False).fit(X, labels)
assert list(clf.classes_) == ["a", "b"] and clf.score(X, labels) > 0.9
try:
    uqnn.BNNRegressor().predict(X)
    raise SystemExit("predict before fit did not raise")
except ValueError as e:
    assert "not fitted" in str(e)
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
