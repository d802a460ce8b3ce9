"""uqnn.sample on a Python callable and on a C callback; Ctrl-C."""
import ctypes
import os
import signal
import threading

import numpy as np
import pytest

import uqnn

# A hard target: correlation 0.98 and scales 100x apart.
SCALES = np.array([100.0, 1.0])
RHO = 0.98
COV = np.array([[SCALES[0] ** 2, RHO * SCALES[0] * SCALES[1]], [RHO * SCALES[0] * SCALES[1], SCALES[1] ** 2]])
PREC = np.linalg.inv(COV)


def logp_and_grad(x):
    g = -PREC @ x
    return 0.5 * x @ g, g


def within_mcse(result):
    """Means and sds of every coordinate within 4 Monte Carlo standard errors of the exact ones."""
    df = result.diagnostics()
    draws = result.draws.reshape(-1, 2)
    for k in range(2):
        row = df.loc[f"x[{k}]"]
        assert abs(row["mean"]) < 4 * row["mcse_mean"], (k, row["mean"], row["mcse_mean"])
        assert abs(draws[:, k].std(ddof=1) - SCALES[k]) < 4 * row["mcse_sd"], (k, draws[:, k].std(), row["mcse_sd"])
    assert df["r_hat"].max() < 1.05  # converged (the z-bounds above are the exactness check)


def test_nuts_on_a_python_callable_gives_the_exact_moments():
    r = uqnn.sample(logp_and_grad, np.array([1.0, 0.1]), method="nuts", chains=4, seed=3)
    assert r.draws.shape == (4, 1000, 2)
    within_mcse(r)
    assert set(r.sample_stats) == {"lp", "acceptance_rate", "step_size", "tree_depth", "n_steps", "diverging", "energy"}
    # lp is the log density at the draw
    np.testing.assert_allclose(r.sample_stats["lp"][0, :5], [logp_and_grad(x)[0] for x in r.draws[0, :5]], rtol=1e-12)


def test_c_callback_gives_the_same_draws_as_the_python_callable():
    # int f(size_t n, const double* x, double* grad, double* lp, void* data), here via ctypes.
    PROTO = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_size_t, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
                             ctypes.POINTER(ctypes.c_double), ctypes.c_void_p)

    def f(n, x, grad, lp, data):
        v = np.ctypeslib.as_array(x, shape=(n,))
        value, g = logp_and_grad(v)
        for k in range(n):
            grad[k] = g[k]
        lp[0] = value
        return 0

    cb = PROTO(f)
    a = uqnn.sample(cb, np.array([1.0, 0.1]), chains=2, warmup=200, draws=200, seed=5)
    b = uqnn.sample(logp_and_grad, np.array([1.0, 0.1]), chains=2, warmup=200, draws=200, seed=5)
    np.testing.assert_array_equal(a.draws, b.draws)


@pytest.mark.parametrize("method", ["hmc", "mala", "slice"])
def test_other_samplers_reach_the_exact_moments(method):
    # mala adapts no metric: on scales 100x apart it does not mix in any affordable run.
    opts = {"hmc": dict(), "mala": dict(warmup=2000, draws=20000, thin=5), "slice": dict(draws=4000)}[method]
    if method == "mala":
        pytest.xfail("mala has no metric adaptation: it does not mix on scales 100x apart (issue 18)")
    r = uqnn.sample(logp_and_grad, np.array([1.0, 0.1]), method=method, chains=4, seed=11, **opts)
    within_mcse(r)


def test_options_are_checked():
    with pytest.raises(ValueError, match="max_dept: is not an option of sampling with nuts"):
        uqnn.sample(logp_and_grad, np.zeros(2), max_dept=3)
    with pytest.raises(ValueError, match="target_accept: 1.5 is invalid"):
        uqnn.sample(logp_and_grad, np.zeros(2), target_accept=1.5)
    with pytest.raises(ValueError, match="needs a network"):
        uqnn.sample(logp_and_grad, np.zeros(2), method="ens")


def test_ctrl_c_raises_keyboard_interrupt_and_keeps_the_draws():
    def slow(x):
        import time

        time.sleep(0.0005)
        return logp_and_grad(x)

    timer = threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt) as caught:
        uqnn.sample(slow, np.array([1.0, 0.1]), method="mala", chains=2, warmup=10, draws=10**7, seed=1)
    timer.cancel()
    result = caught.value.result
    assert result.interrupted and 0 < result.draws.shape[1] < 10**7
    assert np.all(np.isfinite(result.draws))
