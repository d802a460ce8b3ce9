"""Messages and progress: through logging (logger "uqnn") and a tqdm bar, from the C++ core's
reporter, delivered on the main thread."""
import logging
import re

import numpy as np
import pytest

import uqnn
from uqnn import _common


class FakeBar:
    """Records what a tqdm bar would be given."""
    made = []

    def __init__(self, total, desc, unit, leave):
        self.total, self.desc, self.n, self.postfix, self.closed = total, desc, 0, "", False
        FakeBar.made.append(self)

    def update(self, k):
        assert k >= 0  # progress never goes back
        self.n += k

    def set_postfix_str(self, s, refresh=True):
        self.postfix = s

    def close(self):
        self.closed = True


def test_progress_bar_counts_every_iteration(sine, monkeypatch):
    X, y = sine
    FakeBar.made = []
    monkeypatch.setattr(_common, "_bar_factory", lambda: FakeBar)
    uqnn.BNN(hidden=(4,), activation="tanh", method="hmc", chains=2, warmup=50, draws=60).fit(X, y)
    bars = [b for b in FakeBar.made if b.desc == "uqnn hmc"]
    assert len(bars) == 1
    assert bars[0].total == 2 * (50 + 60) and bars[0].n == bars[0].total and bars[0].closed


def test_messages_and_progress_lines_go_to_logging(sine, monkeypatch, caplog):
    X, y = sine
    monkeypatch.setattr(_common, "_bar_factory", lambda: None)
    with caplog.at_level(logging.INFO, logger="uqnn"):
        uqnn.BNN(hidden=(4,), activation="tanh", method="map", epochs=300).fit(X, y)
    text = [r.getMessage() for r in caplog.records if r.name == "uqnn"]
    assert any(t.startswith("uqnn fit: 60 rows") for t in text), text  # the core's info message
    # The final progress line: L-BFGS (the default for a MAP) may converge before its cap of 300
    # evaluations.
    assert any(re.match(r"map \d+/300 \(\d+%\)", t) for t in text), text
    assert sum(t.startswith("map ") for t in text) <= 12                  # a line per tenth, not per epoch


def test_progress_false_is_silent_but_warnings_are_logged(sine, caplog):
    X, y = sine
    with caplog.at_level(logging.INFO, logger="uqnn"):
        # 2 x (20 + 20) NUTS iterations cannot mix: R-hat / ESS warnings must reach the user.
        uqnn.BNN(hidden=(4,), activation="tanh", method="nuts", chains=2, warmup=20, draws=20, progress=False).fit(X, y)
    records = [r for r in caplog.records if r.name == "uqnn"]
    assert not any(r.getMessage().startswith("nuts ") for r in records)
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert any("ESS" in w or "R-hat" in w for w in warnings), warnings


def test_sample_reports_progress(monkeypatch):
    FakeBar.made = []
    monkeypatch.setattr(_common, "_bar_factory", lambda: FakeBar)
    uqnn.sample(lambda x: (-0.5 * x @ x, -x), np.zeros(2), chains=2, warmup=30, draws=40)
    assert [(b.desc, b.n, b.total, b.closed) for b in FakeBar.made] == [("uqnn nuts", 140, 140, True)]
