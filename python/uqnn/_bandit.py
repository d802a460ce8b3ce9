"""Thompson sampling on a contextual bandit (uqnn's predictive/thompson_sampling.hpp)."""
from __future__ import annotations

import numpy as np

from . import _core

import json

AGENTS = tuple(e["name"] for e in json.loads(_core.vocabulary())["bandit_agent"])


def thompson_bandit(contexts, edible, agent: str = "sgld", *, poison_probability: float = 0.5,
                    rounds: int = 10000, updates_per_round: int = 64, batch_size: int = 64,
                    buffer_size: int = 4096, hidden=(100, 100), members: int = 5,
                    sg_step_size: float = 1e-2, adam_learning_rate: float = 1e-3,
                    reward_scale: float = 20.0, noise_sd: float = 0.25, fsgld_weight_prior: bool = True,
                    seed: int = 1) -> dict:
    """Plays the Mushroom bandit (Blundell et al. 2015; Wu et al.'s functional SG-MCMC, sec. 5.4)
    with one Thompson-sampling agent and returns what it did, round by round.

    Each round shows a random row of ``contexts`` (a mushroom); the agent eats it or rejects it.
    Eating an edible one rewards 5, eating a poisonous one -35 with probability
    ``poison_probability`` and 5 otherwise; rejecting rewards 0. The network (inputs: the context
    and the one-hot action; relu layers ``hidden``) predicts reward / ``reward_scale`` with noise
    sd ``noise_sd``; each round adds the tuple to a buffer of the last ``buffer_size`` and takes
    ``updates_per_round`` steps on minibatches of ``batch_size``.

    agent: one of {agents} (``members`` is ens's number of networks). ``sg_step_size`` is
    sgld's and fsgld's eta (step eta / buffer_size), ``adam_learning_rate`` the others'.
    ``fsgld_weight_prior``: fsgld keeps the weight prior beside its GP prior (the default; without
    it, the weights the data leave free random-walk: docs/contextual-bandit.md).

    Returns a dict: ``cumulative_regret`` (expected regret against an oracle that eats exactly the
    edible mushrooms), ``cumulative_reward`` and ``actions`` (0 eat, 1 reject) as arrays of length
    ``rounds``; ``eaten_poisonous``, ``rejected_edible``, ``divergences``, ``interrupted``,
    ``final_weight_norm`` (of the last Thompson draw) and ``agent_prior`` (fsgld's fitted GP).
    Ctrl-C ends the run after the current round. Invalid settings raise ValueError naming the
    setting and its valid range.
    """
    contexts = np.asarray(contexts, dtype=float)
    if contexts.ndim != 2:
        raise ValueError(f"contexts must be a 2-D array (mushrooms, features), got shape {contexts.shape}")
    edible = np.asarray(edible).astype(bool).ravel()
    if agent not in AGENTS:
        raise ValueError(f"agent '{agent}' is not known: valid are {', '.join(AGENTS)}")
    settings = dict(agent=agent, poison_probability=float(poison_probability), rounds=int(rounds),
                    updates_per_round=int(updates_per_round), batch_size=int(batch_size),
                    buffer_size=int(buffer_size), hidden=[int(h) for h in hidden], members=int(members),
                    sg_step_size=float(sg_step_size), adam_learning_rate=float(adam_learning_rate),
                    reward_scale=float(reward_scale), noise_sd=float(noise_sd),
                    fsgld_weight_prior=bool(fsgld_weight_prior), seed=int(seed))
    return _core.thompson_bandit(contexts, [bool(e) for e in edible], settings)


thompson_bandit.__doc__ = thompson_bandit.__doc__.replace(
    "{agents}", "; ".join(f'``"{e["name"]}"`` ({e["summary"]})' for e in json.loads(_core.vocabulary())["bandit_agent"]))
