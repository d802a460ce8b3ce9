"""uqnn.evaluate: scores of a fit or of another tool's predictions (``uqnn evaluate``'s service)."""
from __future__ import annotations

import os
import tempfile

import numpy as np

from . import _core


def _write_csv(path, columns):
    names = list(columns)
    data = np.column_stack([np.asarray(columns[n], dtype=float).reshape(-1) for n in names])
    np.savetxt(path, data, delimiter=",", header=",".join(names), comments="", fmt="%.17g")


def evaluate(model=None, X=None, y=None, *, data=None, predictions=None, target="y", ood_X=None, ood_data=None,
             ood_predictions=None, out=None, levels=(0.5, 0.8, 0.9, 0.95), bins=15, conformal=None, calibration_fraction=None,
             calibration_data=None, raps_lambda=0.01, raps_k_reg=1, seed=0, figures=True):
    """Scores a fit on labelled rows, as ``uqnn evaluate`` does; returns the metrics as a dict.

    ``model`` is a fitted ``uqnn.BNN`` (or a run directory written by ``uqnn fit`` or ``BNN.save``),
    scored on the rows ``X``, ``y`` (arrays) or on the CSV file ``data``. Without a model,
    ``predictions`` is a CSV of another tool's predictions (columns ``mean`` and ``sd``; or
    ``sample_*`` columns; or ``prob_0``, ``prob_1``, ...) and ``data`` the CSV with the ``target``
    column.

    Regression: RMSE, MAE, NLL, CRPS (Gneiting and Raftery 2007; exact for a Gaussian mixture,
    Grimit et al. 2006), coverage and mean width of the central intervals at ``levels``, the
    calibration curve and PIT histogram. Classification: accuracy, NLL, Brier, ECE and MCE with
    equal-width and equal-mass bins (Guo et al. 2017; Nixon et al. 2019), AURC (Geifman et al.
    2019). ``ood_X`` / ``ood_data`` / ``ood_predictions``: AUROC, AUPR and FPR at 95% TPR of the
    predictive entropy, mutual information and max probability.

    ``conformal``: "split" (normalised by the predictive sd; Lei et al. 2018), "cqr" (Romano et
    al. 2019), "aps" (Romano et al. 2020), "raps" (Angelopoulos et al. 2021) or "temperature"
    (Guo et al. 2017), calibrated on ``calibration_fraction`` of the rows (the rest are scored) or
    on ``calibration_data``. metrics.json and the figures go to ``out`` (default: a ``evaluation_*``
    directory in the run directory, or ``uqnn-evaluate``); the returned dict has them under
    ``"files"``.
    """
    options = {"target": target, "levels": [float(v) for v in levels], "bins": int(bins), "conformal": conformal,
               "calibration_fraction": calibration_fraction, "raps_lambda": float(raps_lambda), "raps_k_reg": int(raps_k_reg),
               "seed": int(seed), "figures": bool(figures)}
    for key, value in (("predictions", predictions), ("ood_predictions", ood_predictions), ("calibration_data", calibration_data),
                       ("out", out)):
        if value is not None:
            options[key] = os.fspath(value)
    with tempfile.TemporaryDirectory(prefix="uqnn-evaluate-") as tmp:
        if model is not None:
            run_dir = getattr(model, "_dir", None)
            if run_dir is None and hasattr(model, "fit"):
                raise ValueError("the model is not fitted: call fit first, or give a run directory")
            options["model"] = os.fspath(run_dir if run_dir is not None else model)
            fitted = _core.FittedModel.load(options["model"])
            if options.get("out") is None and run_dir is not None and getattr(model, "_tmp", None) is not None:
                options["out"] = os.path.join(os.getcwd(), "uqnn-evaluate")

            # A fit of a PyTorch module: its rows as the fit saw them (a last layer's features, images flattened).
            setup = getattr(model, "_torch_setup", None)
            as_fitted = model._x if setup is not None and setup() is not None else None

            def rows(name, X_, y_=None):
                if as_fitted is not None:
                    X_ = as_fitted(X_)
                X_ = np.asarray(X_, dtype=float)
                X_ = X_.reshape(-1, 1) if X_.ndim == 1 else X_
                if X_.shape[1] != len(fitted.input_names):
                    raise ValueError(f"{name} has {X_.shape[1]} columns, the model takes {len(fitted.input_names)}")
                cols = {n: X_[:, k] for k, n in enumerate(fitted.input_names)}
                if y_ is not None:
                    y_ = np.asarray(y_, dtype=float)
                    y_ = y_.reshape(-1, 1) if y_.ndim == 1 else y_
                    if y_.shape[0] != X_.shape[0]:
                        raise ValueError(f"X has {X_.shape[0]} rows but y has {y_.shape[0]}")
                    for k, n in enumerate(fitted.target_names[: y_.shape[1]]):
                        cols[n] = y_[:, k]
                path = os.path.join(tmp, name + ".csv")
                _write_csv(path, cols)
                return path

            if X is not None:
                if y is None:
                    raise ValueError("X needs its labels y")
                options["data"] = rows("data", X, y)
            if ood_X is not None:
                options["ood_data"] = rows("ood", ood_X)
        if data is not None:
            options["data"] = os.fspath(data)
        if ood_data is not None:
            options["ood_data"] = os.fspath(ood_data)
        metrics, files, warnings = _core.evaluate(options)
    metrics["files"] = files
    if warnings:
        metrics["figure_warnings"] = warnings
    return metrics
