"""Helpers shared by the estimator and uqnn.sample: logging, interrupts, summaries."""
from __future__ import annotations

import logging

import numpy as np

from . import _core

log = logging.getLogger("uqnn")

SUMMARY_COLUMNS = ["mean", "sd", "hdi_3%", "hdi_97%", "mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat"]


def _bar_factory():
    """tqdm's bar class when tqdm is installed, else None (progress then goes to log lines)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


class Reporter:
    """Receives a run's messages and progress from the C++ core, on the main thread.

    Messages go to the ``logging`` logger "uqnn" (info and warning). Progress is a tqdm bar when tqdm
    is installed, and otherwise a log line (level INFO) at every tenth; ``progress=False`` turns it off.
    """

    def __init__(self, progress: bool = True):
        self.enabled = progress
        self._bar = None
        self._task = None
        self._tenth = -1
        self._tqdm = _bar_factory() if progress else None

    def message(self, level: str, text: str) -> None:
        (log.warning if level == "warning" else log.info)(text)

    def progress(self, p: dict) -> None:
        if not self.enabled:
            return
        if p["task"] != self._task:
            self._close()
            self._task, self._tenth = p["task"], -1
            if self._tqdm is not None:
                self._bar = self._tqdm(total=p["total"], desc=f"uqnn {p['task']}", unit="it", leave=True)
        postfix = ", ".join(s for s in (f"divergences={p['divergences']}" if p["divergences"] else "", p["detail"]) if s)
        if self._bar is not None:
            self._bar.update(p["done"] - self._bar.n)
            if postfix:
                self._bar.set_postfix_str(postfix, refresh=False)
        else:
            tenth = 10 * p["done"] // max(p["total"], 1)
            if tenth > self._tenth or p["finished"]:
                self._tenth = tenth
                log.info("%s %d/%d (%.0f%%) %.1f s%s%s", p["task"], p["done"], p["total"], 100 * p["done"] / max(p["total"], 1),
                         p["elapsed"], " " + postfix if postfix else "", " (interrupted)" if p["interrupted"] else "")
        if p["finished"]:
            self._close()
            self._task = None

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a fit or a sampling run: the draws made so far are kept in ``result``."""

    def __init__(self, result):
        super().__init__("interrupted: the draws made so far are kept in .result")
        self.result = result


def import_arviz():
    """The arviz module, or an ImportError saying how to install it."""
    try:
        import arviz
    except ImportError as e:
        raise ImportError("this needs ArviZ, which is not installed: pip install arviz (in a virtual environment; "
                          "uqnn's tests make one with it, build/pyenv, through python/tests/run-pytest)") from e
    return arviz


def summary_frame(draws: np.ndarray, names: list[str]):
    """ArviZ's ``az.summary`` columns for draws of shape (chains, draws, K), computed by uqnn's C++
    diagnostics (rank-normalised split R-hat, bulk and tail ESS as Stan and ArviZ compute them)."""
    import pandas as pd

    rows = _core.summarize(np.ascontiguousarray(draws, dtype=np.float64), list(names), 0.94)
    return pd.DataFrame([r[1:] for r in rows], index=[r[0] for r in rows], columns=SUMMARY_COLUMNS)


def option_doc(groups) -> str:
    """Docstring text for option groups declared in C++ (name, default, valid values, help)."""
    lines = []
    for g in groups:
        lines.append(f"    {g['title']}:")
        for o in g["options"]:
            lines.append(f"      {o['name']} = {o['default']!r}  ({o['valid']}): {o['help']}")
    return "\n".join(lines)
