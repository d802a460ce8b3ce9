"""BNN.to_inference_data: ArviZ groups from a fitted BNN (arviz is needed only here)."""
from __future__ import annotations

import os

import numpy as np

from . import _core
from ._common import import_arviz


def to_inference_data(est, X=None, y=None):
    az = import_arviz()
    f = est._require_fit()
    if X is None:
        if getattr(est, "_X_train", None) is None:
            raise ValueError("to_inference_data: this run was loaded from files, which hold no training data; pass X and y")
        x, t = est._X_train, est._y_train
    else:
        if y is None:
            raise ValueError("to_inference_data: give y with X")
        x, t = est._x(X), est._targets(y)
    t = np.ascontiguousarray(t.reshape(len(x), -1))
    draws = est.draws  # (chains, draws, K)
    C, D, K = draws.shape
    names = est.param_names
    posterior = {"theta": draws}
    # Pointwise log-likelihood and one predictive draw per posterior draw, in draws.csv order
    # (chain after chain, as est.draws is built).
    ll = f.pointwise_log_likelihood(x, t)
    y_name = "y"
    log_lik = {y_name: ll.reshape(C, D, -1)}
    pp = f.sample_predictive(x, list(range(C * D)), est.seed)[:, :, 0] if t.shape[1] == 1 else None
    groups = dict(posterior=posterior, log_likelihood=log_lik, observed_data={y_name: t[:, 0] if t.shape[1] == 1 else t},
                  coords={"param": names}, dims={"theta": ["param"]})
    if pp is not None:
        groups["posterior_predictive"] = {y_name: pp.reshape(C, D, -1)}
    nc = os.path.join(est._dir, "posterior.nc")
    if os.path.exists(nc):  # MCMC runs: the sampler statistics the fit wrote, ArviZ's names
        stats = _core.read_sample_stats(nc)
        if stats:
            groups["sample_stats"] = stats
    return az.from_dict(**groups)
