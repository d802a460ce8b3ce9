"""Any PyTorch module through PyTorch (uqnn.TorchModel, BNN.from_torch's fallback), and Bayesian last
layers on frozen networks (BNN.from_torch(subset="last-layer")): the same draws as uqnn's own
network wherever uqnn can also translate the module."""
import pickle

import numpy as np
import pytest

import uqnn

torch = pytest.importorskip("torch", reason="python3-torch (Debian) is not installed")
nn = torch.nn


def make_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 5), nn.Tanh(), nn.Linear(5, 3), nn.Tanh(), nn.Linear(3, 1)).double()


class Residual(nn.Module):
    """Nothing uqnn translates: a LayerNorm, a skip connection and a custom activation."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(2, 6)
        self.norm = nn.LayerNorm(6)
        self.mid = nn.Linear(6, 6)
        self.out = nn.Linear(6, 1)

    def forward(self, x):
        h = torch.tanh(self.inp(x))
        h = h + torch.sin(self.mid(self.norm(h)))
        return self.out(h)


def make_residual():
    torch.manual_seed(0)
    return Residual().double()


# Every method that runs through PyTorch, at cheap settings. The draws of the PyTorch-backed fit must
# be those of uqnn's own MLP to rounding: same seed, same minibatches, same starts.
CHAIN = {"chains": 2, "warmup": 20, "draws": 15, "chain_init": "random"}
# Rounding differences (PyTorch's and Eigen's sums in another order) grow along a sampler's
# trajectories and an L-BFGS line search: short NUTS chains, and Adam for the MAP fits.
ADAM = {"optimizer": "adam"}
METHODS = {
    "map": {"epochs": 150, **ADAM},
    "ens": {"ens_members": 2, "epochs": 60},
    "rms": {"ens_members": 2, "epochs": 60},
    "swag": {"epochs": 40, "swag_steps": 20, "num_samples": 10},
    "sgld": {**CHAIN, "step_size": 1e-4, "sg_batch_size": 10},
    "sghmc": {**CHAIN, "step_size": 1e-4, "sg_batch_size": 10},
    "psgld": {**CHAIN, "step_size": 1e-4, "sg_batch_size": 10},
    "vi": {"epochs": 60, "num_samples": 20},
    "nuts": {**CHAIN, "warmup": 10, "draws": 5, "max_depth": 5},
    "hmc": {**CHAIN, "num_steps": 5},
    "mala": CHAIN,
    "laplace": {"epochs": 60, "laplace_structure": "diag", "num_samples": 20, **ADAM},
}
LAPLACE_VARIANTS = {
    "diag-exact": {"epochs": 60, "laplace_structure": "diag", "laplace_curvature": "exact", "num_samples": 20, **ADAM},
    "last-layer-ggn": {"epochs": 60, "laplace_subset": "last-layer", "num_samples": 20, **ADAM},
    "full-ggn-glm": {"epochs": 60, "laplace_predictive": "glm", "num_samples": 20, **ADAM},
}


def both_ways(method, options, X, y, **kw):
    out = []
    for backend in ("native", "torch"):
        est = uqnn.BNN.from_torch(make_net(), method=method, backend=backend, seed=3, progress=False, noise=0.3,
                                  standardize=True, **options, **kw)
        est.fit(X, y)
        out.append(est)
    return out


def _settings(method, options):
    valid = {o.split(" = ")[0].strip() for o in uqnn.BNN.options(method).splitlines() if " = " in o}
    return {k: v for k, v in options.items() if k in valid}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_same_draws_through_pytorch_as_native(method, data):
    X, y = data
    native, through_torch = both_ways(method, _settings(method, METHODS[method]), X, y)
    kind = through_torch._fitted.model_json["model"]
    kind = kind.get("base", kind)["kind"]
    assert kind == "external"
    assert native._fitted.model_json["model"].get("base", native._fitted.model_json["model"])["kind"] == "mlp"
    assert native.draws.shape == through_torch.draws.shape
    np.testing.assert_allclose(through_torch.draws, native.draws, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(through_torch.predict(X[:5]), native.predict(X[:5]), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("variant", sorted(LAPLACE_VARIANTS))
def test_laplace_variants_through_pytorch_as_native(variant, data):
    """Exact Hessian-vector products (GGN part from jvp and the pullback, second-order part from
    PyTorch's double backward), the GGN from per-example Jacobians, and the linearised predictive."""
    X, y = data
    native, through_torch = both_ways("laplace", LAPLACE_VARIANTS[variant], X, y)
    np.testing.assert_allclose(through_torch.draws, native.draws, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(through_torch.predict(X[:5], return_std=True), native.predict(X[:5], return_std=True),
                               rtol=1e-7, atol=1e-8)


def test_same_draws_whatever_the_thread_count(data):
    X, y = data
    draws = []
    for threads in (1, 2):
        est = uqnn.TorchModel(make_residual(), method="nuts", seed=5, threads=threads, progress=False, noise=0.3,
                              **{**CHAIN, "max_depth": 4})
        draws.append(est.fit(X, y).draws)
    np.testing.assert_array_equal(draws[0], draws[1])


def test_untranslatable_module_fits_predicts_saves_and_loads(data, tmp_path):
    X, y = data
    net = make_residual()
    with pytest.raises(ValueError):
        uqnn.from_torch(net)  # uqnn cannot translate it ...
    est = uqnn.BNN.from_torch(net, method="map", seed=1, progress=False, noise=0.3, epochs=80)  # ... so it runs through PyTorch
    est.fit(X, y)
    assert est._fitted.model_json["model"]["kind"] == "external"
    mean = est.predict(X)
    # the MAP's state dict in the module gives the predictive mean (noise fixed: the mean is the network's)
    sd = est.to_torch_state_dicts()
    assert len(sd) == 1 and set(sd[0]) == set(net.state_dict())
    clone = make_residual()
    clone.load_state_dict(sd[0])
    with torch.no_grad():
        np.testing.assert_allclose(clone(torch.tensor(X))[:, 0].numpy(), mean, rtol=1e-10, atol=1e-12)
    s = est.sample_predictive(X[:4], n=50)
    assert s.shape == (50, 4)
    est.save(tmp_path / "run")
    again = uqnn.load(tmp_path / "run")
    np.testing.assert_allclose(again.predict(X), mean, rtol=1e-12)
    np.testing.assert_allclose(again.draws, est.draws)
    unpickled = pickle.loads(pickle.dumps(est))  # joblib, GridSearchCV(n_jobs=...), copy.deepcopy
    np.testing.assert_allclose(unpickled.predict(X), mean, rtol=1e-12)


def test_methods_that_need_uqnns_own_layers_refuse_with_the_reason(data):
    X, y = data
    for method, reason in {"slice": "coordinate-wise", "dropout": "uqnn's own MLP layers", "nngp": "NNGP kernel"}.items():
        est = uqnn.TorchModel(make_residual(), method=method, progress=False, noise=0.3)
        with pytest.raises(ValueError, match=rf"--method {method} does not run on a network uqnn could not translate.*{reason}"):
            est.fit(X, y)
    est = uqnn.TorchModel(make_residual(), method="laplace", laplace_structure="kron", progress=False, noise=0.3)
    with pytest.raises(ValueError, match="kron factorises uqnn's own dense layers"):
        est.fit(X, y)


def test_classification_with_a_cross_entropy_module():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 1, 4, 4))  # images, one channel
    labels = (X.reshape(60, -1).mean(axis=1) > 0).astype(int) + (X[:, 0, 0, 0] > 1).astype(int)
    torch.manual_seed(1)
    net = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1, padding_mode="circular"), nn.ReLU(), nn.Flatten(), nn.Linear(32, 3)).double()
    est = uqnn.TorchModel(net, loss="cross_entropy", method="map", progress=False, epochs=100)
    est.fit(X, labels)
    p = est.predict(X)
    assert p.shape == (60, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    assert est.metrics(X, labels)["accuracy"] > 0.6


# -- Bayesian last layers ------------------------------------------------------------------------------

class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 4), nn.Tanh())
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.body(x))


def test_last_layer_is_uqnns_linear_model_on_the_frozen_features(data):
    """The head fitted by NUTS on the features gives the draws of uqnn's own Linear model fitted on
    the same features by hand: the features are computed once by the frozen network, and the head
    runs natively."""
    X, y = data
    torch.manual_seed(0)
    net = Backbone().double()
    opts = {**CHAIN, "max_depth": 4}
    est = uqnn.BNN.from_torch(net, subset="last-layer", method="nuts", seed=2, progress=False, noise=0.3, **opts)
    est.fit(X, y)
    assert est._fitted.model_json["model"]["kind"] == "mlp" and est.draws.shape[-1] == 5
    with torch.no_grad():
        features = net.body(torch.tensor(X)).numpy()
    by_hand = uqnn.BNN(hidden=(), activation="identity", method="nuts", seed=2, progress=False, noise=0.3, standardize=False, **opts)
    by_hand._start = np.concatenate([net.head.weight.detach().numpy().ravel(), net.head.bias.detach().numpy()])
    by_hand.fit(features, y)
    np.testing.assert_array_equal(est.draws, by_hand.draws)
    np.testing.assert_allclose(est.predict(X), by_hand.predict(features), rtol=1e-12)
    # each draw's state dict in the module gives that draw's network
    sd = est.to_torch_state_dicts()
    copy = Backbone().double()
    copy.load_state_dict(sd[0])
    theta = est._fitted.network_weights[0]
    with torch.no_grad():
        np.testing.assert_allclose(copy(torch.tensor(X))[:, 0].numpy(), features @ theta[:4] + theta[4], rtol=1e-10)


def test_last_layer_ensemble_of_heads_saves_and_loads(data, tmp_path):
    X, y = data
    torch.manual_seed(0)
    est = uqnn.BNN.from_torch(Backbone().double(), subset="last-layer", method="ens", seed=2, progress=False,
                              ens_members=3, epochs=50)
    est.fit(X, y)
    assert est.draws.shape[:2] == (1, 3)
    est.save(tmp_path / "heads")
    again = uqnn.load(tmp_path / "heads")
    np.testing.assert_allclose(again.predict(X), est.predict(X), rtol=1e-12)


def test_last_layer_refuses_a_module_whose_output_is_not_its_last_linear(data):
    X, y = data

    class Scaled(Backbone):
        def forward(self, x):
            return 2.0 * super().forward(x)

    est = uqnn.BNN.from_torch(Scaled().double(), subset="last-layer", method="map", progress=False)
    with pytest.raises(ValueError, match="not its last nn.Linear"):
        est.fit(X, y)


def test_subnetwork_by_parameter_names(data):
    X, y = data
    net = make_residual()
    frozen = {k: v.clone() for k, v in net.state_dict().items()}
    est = uqnn.BNN.from_torch(net, subset=["out.weight", "out.bias"], method="map", progress=False, noise=0.3, epochs=50)
    est.fit(X, y)
    assert est.draws.shape[-1] == 7
    sd = est.to_torch_state_dicts()[0]
    for k in frozen:
        if not k.startswith("out."):
            assert torch.equal(sd[k], frozen[k])


def test_to_inference_data_of_a_module(data):
    pytest.importorskip("arviz", reason="ArviZ comes from PyPI into build/pyenv (python/tests/run-pytest)")
    X, y = data
    est = uqnn.TorchModel(make_residual(), method="nuts", seed=1, progress=False, noise=0.3,
                          **{**CHAIN, "warmup": 10, "draws": 5, "max_depth": 4}).fit(X, y)
    idata = est.to_inference_data()
    assert idata.posterior["theta"].shape == (2, 5, est.draws.shape[-1])
    assert idata.log_likelihood["y"].shape == (2, 5, len(X))
    np.testing.assert_allclose(idata.posterior["theta"].values, est.draws)
