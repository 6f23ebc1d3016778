"""Sizing an inconclusive verdict (``pytest_ragdive.plugin.power``): the number of documents
it advises must give the exact test the power it promises, on simulated scores."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_ragdive.plugin import power
from pytest_ragdive.plugin.permutation import permutation_test
from pytest_ragdive.plugin.verdict import decide

SD, CHANGE, LEVEL = 0.2, 0.15, 0.01


def rejections(rng: np.random.Generator, documents: int, sessions: int = 150) -> float:
    """The share of sessions whose exact test (3 baseline runs, 1 candidate run per
    document) rejects at ``LEVEL`` when the candidate is worse by ``CHANGE``."""
    hits = 0
    for _ in range(sessions):
        levels = rng.uniform(0.3, 0.7, documents)
        base = {f"d{i}": list(levels[i] + rng.normal(0, SD, 3)) for i in range(documents)}
        cand = {f"d{i}": [levels[i] - CHANGE + rng.normal(0, SD)] for i in range(documents)}
        hits += permutation_test(base, cand, True, draws=2000,
                                 seed=int(rng.integers(1e9)))[0] <= LEVEL
    return hits / sessions


def test_the_advised_documents_give_about_the_promised_power() -> None:
    needed = power.documents_for(CHANGE, SD, 1 / 3 + 1, LEVEL)
    assert needed is not None and 20 < needed < 60
    rng = np.random.default_rng(3)
    assert 0.65 <= rejections(rng, needed) <= 0.95
    # a quarter of them is clearly underpowered
    assert rejections(rng, needed // 4) < 0.45


def test_more_documents_detect_smaller_changes() -> None:
    sizes = [power.detectable(SD, 4 / 3, d, LEVEL) for d in (3, 6, 12, 24)]
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[0] / sizes[2] == pytest.approx(2.0)  # four times the documents, half the change


def test_an_inconclusive_verdict_says_how_many_documents_would_decide() -> None:
    base = {"correctness": {f"d{i}": [0.60, 0.70, 0.80] for i in range(6)}}
    cand = {"correctness": {f"d{i}": [v] for i, v in enumerate([0.55, 0.8, 0.65, 0.7, 0.6, 0.75])}}
    (verdict,) = decide(base, cand, suspects=["correctness"])
    assert verdict.verdict == "inconclusive" and verdict.delta == pytest.approx(-0.025)
    assert "at the runs' spread (SD 0.10)" in verdict.reason
    needed = power.documents_for(0.025, 0.1, 4 / 3, 0.05)
    assert needed is not None and needed > 6
    assert f"about {needed} documents would detect 0.025" in verdict.reason


def test_runs_that_never_vary_ask_for_runs_not_a_size() -> None:
    assert power.advice(0.0, 1.0, 3, 1 / 64, 0.2, 0.01) == \
        "the runs do not vary: add runs to size the design"


def test_a_band_of_identical_runs_is_sized_by_every_run() -> None:
    # forgetfulness [0, 0] in every baseline run: the candidate's runs give the spread
    strata = [(np.zeros(3), np.array([0.5, 0.0])), (np.zeros(3), np.array([0.0, 0.5]))]
    sd, factor = power.unpaired_spread(strata)
    assert sd > 0 and factor == pytest.approx(1 / 3 + 1 / 2)


def test_no_fewer_documents_than_let_the_exact_test_reach_its_level() -> None:
    # 3 baseline runs and 1 candidate run: 4 labellings a document, 4^3 = 64 < 100
    assert power.documents_for(5.0, 0.1, 4 / 3, 0.01, labellings=4) == 4
    assert power.documents_for(5.0, 0.1, 4 / 3, 0.01) == 1
