"""PyTorch in and out: from_torch, LogDensity against torch's autograd, BNN.from_torch, state dicts."""
import numpy as np
import pytest

import uqnn

torch = pytest.importorskip("torch", reason="python3-torch (Debian) is not installed")
nn = torch.nn


def make_net(act=nn.Tanh):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 5), act(), nn.Linear(5, 3), act(), nn.Linear(3, 1)).double()


def torch_log_posterior(net, X, y, noise, prior_sigma):
    f = net(torch.tensor(X))[:, 0]
    lik = torch.distributions.Normal(f, noise).log_prob(torch.tensor(y)).sum()
    prior = sum(torch.distributions.Normal(0.0, prior_sigma).log_prob(p).sum() for p in net.parameters())
    return lik + prior


@pytest.mark.parametrize("act", [nn.Tanh, nn.ReLU, nn.SiLU, nn.Sigmoid])
def test_log_density_and_gradient_equal_torch(act, data):
    X, y = data
    net = make_net(act)
    spec = uqnn.from_torch(net)
    assert spec["hidden"] == (5, 3) and spec["theta"].size == sum(p.numel() for p in net.parameters())
    ld = uqnn.LogDensity(X, y, hidden=spec["hidden"], activation=spec["activation"], noise=0.3, prior_sigma=1.5,
                         standardize=False)
    assert ld.dim == spec["theta"].size
    lp, grad = ld(spec["theta"])
    net.zero_grad()
    ref = torch_log_posterior(net, X, y, 0.3, 1.5)
    ref.backward()
    ref_grad = np.concatenate([np.concatenate([l.weight.grad.numpy().flatten(), l.bias.grad.numpy()])
                               for l in net if isinstance(l, nn.Linear)])
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12)
    # uqnn may drop constants of the densities: compare differences between two points
    theta2 = spec["theta"] + 0.01 * np.arange(spec["theta"].size) / spec["theta"].size
    from uqnn._torch import state_dicts

    net.load_state_dict(state_dicts(theta2[None, :], spec["hidden"], 2, 1)[0])
    with torch.no_grad():
        ref2 = torch_log_posterior(net, X, y, 0.3, 1.5)
    assert ld.logp(theta2) - lp == pytest.approx(float(ref2 - ref), rel=1e-12, abs=1e-10)


def test_unsupported_layers_are_named_with_what_is_supported():
    with pytest.raises(ValueError, match=r"Dropout is not supported; supported are nn.Linear"):
        uqnn.from_torch(nn.Sequential(nn.Linear(1, 3), nn.Dropout(0.1), nn.Linear(3, 1)))
    with pytest.raises(ValueError, match="mixed activations"):
        uqnn.from_torch(nn.Sequential(nn.Linear(1, 3), nn.Tanh(), nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1)))


def test_bnn_from_torch_starts_at_the_users_network(data):
    X, y = data
    net = make_net()
    # No training: the MAP is the user's network, so predictions equal torch's outputs.
    bnn = uqnn.BNN.from_torch(net, method="map", noise=0.3, standardize=False, optimizer="adam", epochs=1, lr=1e-300, progress=False).fit(X, y)
    with torch.no_grad():
        ref = net(torch.tensor(X))[:, 0].numpy()
    np.testing.assert_allclose(bnn.predict(X), ref, rtol=1e-12, atol=1e-12)
    # ... and the draws go back to torch
    sd = bnn.to_torch_state_dicts()
    assert len(sd) == 1
    net2 = make_net()
    for p in net2.parameters():
        p.data.zero_()
    net2.load_state_dict(sd[0])
    with torch.no_grad():
        np.testing.assert_allclose(net2(torch.tensor(X))[:, 0].numpy(), ref, rtol=1e-12, atol=1e-12)


def test_log_density_feeds_uqnn_sample(data):
    X, y = data
    ld = uqnn.LogDensity(X, y, hidden=(3,), activation="tanh", noise=0.3)
    r = uqnn.sample(ld, ld.initial_point(0), chains=2, warmup=100, draws=50)
    assert r.draws.shape == (2, 50, ld.dim) and np.all(np.isfinite(r.sample_stats["lp"]))


def test_a_torch_start_refuses_a_shrinkage_prior(data):
    # Its parameters are standardised weights and log-scales: a torch network's weights are not a start.
    X, y = data
    est = uqnn.BNN.from_torch(make_net(), method="map", prior="horseshoe", progress=False, epochs=5)
    with pytest.raises(ValueError, match="cannot start the fit"):
        est.fit(X, y)
