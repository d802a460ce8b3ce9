"""uqnn.thompson_bandit: a contextual bandit played by Thompson sampling."""
import numpy as np
import pytest

import uqnn


def small_mushrooms():
    # 8 mushrooms, 3 binary features; the first feature says poisonous.
    contexts = np.array([[m % 2, (m // 2) % 2, (m // 4) % 2] for m in range(8)], dtype=float)
    edible = contexts[:, 0] == 0
    return contexts, edible


def test_sgld_learns_and_the_trace_is_consistent():
    contexts, edible = small_mushrooms()
    r = uqnn.thompson_bandit(contexts, edible, "sgld", rounds=3000, updates_per_round=16, buffer_size=512,
                             hidden=(16,), seed=25)
    regret = r["cumulative_regret"]
    assert regret.shape == (3000,) and r["actions"].shape == (3000,)
    assert np.all(np.diff(regret) >= 0)
    # Each round's regret is 5 (an edible one rejected), 40 p - 5 = 15 (a poisonous one eaten) or 0.
    steps = np.diff(np.concatenate([[0.0], regret]))
    assert set(np.unique(steps)) <= {0.0, 5.0, 15.0}
    assert regret[-1] == pytest.approx(5 * r["rejected_edible"] + 15 * r["eaten_poisonous"])
    assert regret[-1] - regret[-301] < 0.3 * regret[299]
    assert r["divergences"] == 0 and not r["interrupted"]
    # The same seed gives the same run.
    again = uqnn.thompson_bandit(contexts, edible, "sgld", rounds=3000, updates_per_round=16, buffer_size=512,
                                 hidden=(16,), seed=25)
    np.testing.assert_array_equal(again["actions"], r["actions"])


def test_fsgld_reports_its_gp_prior():
    contexts, edible = small_mushrooms()
    r = uqnn.thompson_bandit(contexts, edible, "fsgld", rounds=50, updates_per_round=4, hidden=(8,), seed=3)
    assert r["agent_prior"].startswith("rbf(")
    assert r["cumulative_regret"].shape == (50,)


def test_bad_settings_are_value_errors():
    contexts, edible = small_mushrooms()
    with pytest.raises(ValueError, match="agent 'ucb' is not known"):
        uqnn.thompson_bandit(contexts, edible, "ucb")
    with pytest.raises(ValueError, match="poison_probability"):
        uqnn.thompson_bandit(contexts, edible, poison_probability=1.5, rounds=5)
    with pytest.raises(ValueError, match="edible has 7 entries"):
        uqnn.thompson_bandit(contexts, edible[:7], rounds=5)
    with pytest.raises(ValueError, match="sg_step_size"):
        uqnn.thompson_bandit(contexts, edible, sg_step_size=-1.0, rounds=5)


def test_fsgld_keeps_the_weight_prior_unless_told_not_to():
    # Without the weight prior (seed 002's eq. 6 alone) nothing holds the weight directions that move
    # the network neither at the buffer nor at the measurement points: they random-walk.
    contexts, edible = small_mushrooms()
    kw = dict(rounds=500, updates_per_round=16, buffer_size=64, hidden=(8,), seed=3)
    with_prior = uqnn.thompson_bandit(contexts, edible, "fsgld", **kw)
    alone = uqnn.thompson_bandit(contexts, edible, "fsgld", fsgld_weight_prior=False, **kw)
    assert with_prior["agent_prior"].endswith("plus the weight prior N(0, 1 / fan_in)")
    assert "weight prior" not in alone["agent_prior"]
    assert alone["final_weight_norm"] > 2 * with_prior["final_weight_norm"], (alone["final_weight_norm"],
                                                                             with_prior["final_weight_norm"])
