"""Draws in draws.npy (draws_format="npy", automatic above 100,000 parameters): the same values as
draws.csv, mapped by numpy.load(mmap_mode="r"), read back by uqnn.load, and ArviZ's posterior from them."""
import json
import os

import numpy as np
import pytest

import uqnn

SGLD = dict(hidden=(4,), method="sgld", step_size=1e-4, chains=2, warmup=20, draws=15, seed=3, progress=False)


def test_npy_draws_equal_the_csv_runs_and_load_back(sine, tmp_path):
    X, y = sine
    csv = uqnn.BNN(out=tmp_path / "csv", draws_format="csv", **SGLD).fit(X, y)
    npy = uqnn.BNN(out=tmp_path / "npy", draws_format="npy", **SGLD).fit(X, y)
    assert os.path.exists(tmp_path / "npy" / "draws.npy") and not os.path.exists(tmp_path / "npy" / "draws.csv")
    assert json.load(open(tmp_path / "npy" / "model.json"))["draws_file"] == "draws.npy"
    # The file is what numpy reads: [draws, K], chain after chain, the CSV run's values bit for bit.
    raw = np.load(tmp_path / "npy" / "draws.npy", mmap_mode="r")
    assert raw.dtype == np.float64 and raw.shape == (30, csv.draws.shape[2])
    np.testing.assert_array_equal(raw, csv.draws.reshape(30, -1))
    np.testing.assert_array_equal(npy.draws, csv.draws)
    assert isinstance(npy.draws.base, np.memmap) or isinstance(npy.draws, np.memmap)
    # Read back from the directory: the same draws and predictions.
    loaded = uqnn.load(tmp_path / "npy")
    np.testing.assert_array_equal(loaded.draws, csv.draws)
    np.testing.assert_array_equal(loaded.predict(X[:5]), csv.predict(X[:5]))
    stats = np.genfromtxt(tmp_path / "npy" / "draws_stats.csv", delimiter=",", names=True)
    assert list(stats["chain"]) == [0] * 15 + [1] * 15


def test_to_inference_data_of_an_npy_run(sine, tmp_path):
    az = pytest.importorskip("arviz", reason="ArviZ comes from PyPI into build/pyenv")
    X, y = sine
    est = uqnn.BNN(out=tmp_path / "npy", draws_format="npy", **SGLD).fit(X, y)
    idata = est.to_inference_data() if hasattr(est, "to_inference_data") else uqnn.to_inference_data(est)
    assert isinstance(idata, az.InferenceData)
    np.testing.assert_array_equal(idata.posterior["theta"].values, np.asarray(est.draws))


def test_an_unknown_draws_format_is_refused(sine, tmp_path):
    X, y = sine
    with pytest.raises(Exception, match="npy"):
        uqnn.BNN(out=tmp_path / "x", draws_format="parquet", **SGLD).fit(X, y)


def test_a_pytorch_modules_npy_run_loads_back(data, tmp_path):
    torch = pytest.importorskip("torch", reason="python3-torch (Debian) is not installed")
    X, y = data
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    kw = dict(loss="gaussian", noise=0.3, method="sgld", step_size=1e-4, chains=1, warmup=10, draws=12, seed=2, progress=False)
    csv = uqnn.TorchModel(net, out=tmp_path / "csv", draws_format="csv", **kw).fit(X, y)
    npy = uqnn.TorchModel(net, out=tmp_path / "npy", draws_format="npy", **kw).fit(X, y)
    np.testing.assert_array_equal(np.asarray(npy.draws), csv.draws)
    loaded = uqnn.load(tmp_path / "npy", module=net)
    np.testing.assert_array_equal(np.asarray(loaded.draws), csv.draws)
    np.testing.assert_array_equal(loaded.predict(X[:4]), csv.predict(X[:4]))
