"""Helpers shared by the estimator and uqnn.sample: logging, interrupts, summaries."""
from __future__ import annotations

import logging

import numpy as np

from . import _core

log = logging.getLogger("uqnn")

SUMMARY_COLUMNS = ["mean", "sd", "hdi_3%", "hdi_97%", "mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat"]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a fit or a sampling run: the draws made so far are kept in ``result``."""

    def __init__(self, result):
        super().__init__("interrupted: the draws made so far are kept in .result")
        self.result = result


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
