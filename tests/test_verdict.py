"""The variance-aware verdict (``pytest_ragdive.plugin.verdict``): properties of the
stratified permutation test, Holm's step-down and the per-metric decision, on seeded
simulated scores. No model, no network."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from pytest_ragdive.plugin.permutation import paired, paired_p, permutation_test
from pytest_ragdive.plugin.verdict import decide, holm, tarone


def permutation_p(base, cand, higher_is_better: bool, **kwargs) -> float:
    """The p-value of the permutation test."""
    return permutation_test(base, cand, higher_is_better, **kwargs)[0]


def least_p(base, cand, higher_is_better: bool) -> float:
    """The smallest p-value the permutation test can give on these scores."""
    return permutation_test(base, cand, higher_is_better)[1]


def runs(rng: np.random.Generator, docs: int, n: int, shift: float = 0.0) -> dict[str, list[float]]:
    """document -> ``n`` scores in [0, 1]; each document has its own level."""
    levels = np.linspace(0.3, 0.8, docs)
    return {f"doc{d}": list(np.clip(levels[d] + shift + rng.normal(0, 0.08, n), 0, 1))
            for d in range(docs)}



def test_identical_distributions_rarely_give_a_small_p() -> None:
    rng = np.random.default_rng(0)
    alpha, datasets = 0.05, 400
    small = 0
    for _ in range(datasets):
        base = runs(rng, 4, 3)
        p = permutation_p(base, runs(rng, len(base), 2), True)  # 10^4 labellings: exact
        small += p <= alpha
    # an exact permutation test has P(p <= alpha) <= alpha; allow three standard errors
    assert small / datasets <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / datasets)


def test_identical_distributions_rarely_give_a_worse_verdict() -> None:
    rng = np.random.default_rng(1)
    sessions, alarms = 150, 0
    for _ in range(sessions):
        base = {m: runs(rng, 5, 3) for m in ("correctness", "forgetfulness")}
        cand = {m: runs(rng, len(base[m]), 2) for m in base}
        alarms += any(v.verdict == "worse" for v in decide(base, cand))
    assert alarms / sessions <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / sessions)


def test_a_clearly_worse_candidate_is_worse() -> None:
    rng = np.random.default_rng(2)
    base = {m: runs(rng, 5, 3) for m in ("correctness", "context_retention")}
    cand = {m: runs(rng, len(base[m]), 2, shift=-0.3) for m in base}
    verdicts = decide(base, cand)
    assert [v.verdict for v in verdicts] == ["worse", "worse"]
    assert all(v.delta < -0.2 and v.p < 0.001 for v in verdicts)
    assert not any(v.verdict == "inconclusive" for v in verdicts)


def test_the_least_p_of_untied_scores_follows_the_formula() -> None:
    base = {"a": [0.5, 0.6, 0.7], "b": [0.4, 0.5, 0.6], "c": [0.7, 0.8, 0.9]}
    cand = {"a": [0.1], "b": [0.2], "c": [0.3]}
    assert least_p(base, cand, True) == pytest.approx(1 / 64)
    mixed_base = {"a": [0.5, 0.6, 0.7], "b": [0.4, 0.5, 0.6, 0.7], "c": [0.7, 0.8]}
    mixed_cand = {"a": [0.1], "b": [0.2, 0.25], "c": [0.3, 0.35]}
    assert least_p(mixed_base, mixed_cand, True) == pytest.approx(1 / (4 * 15 * 6))
    # documents on one side only do not count
    assert least_p({**base, "x": [0.1]}, {**cand, "y": [0.2]}, True) == pytest.approx(1 / 64)


def test_the_most_extreme_labelling_reaches_the_least_p() -> None:
    base = {"a": [0.5, 0.6, 0.7], "b": [0.4, 0.5, 0.6, 0.7], "c": [0.7, 0.8]}
    cand = {"a": [0.1], "b": [0.2, 0.25], "c": [0.3, 0.35]}
    assert permutation_p(base, cand, True) == pytest.approx(least_p(base, cand, True))
    # the mirror image is the least extreme: every labelling is at least as bad
    assert permutation_p(base, cand, False) == 1.0
    # Monte Carlo (360 labellings, 100 draws) counts the observed one: never below 1/101
    assert 1 / 101 <= permutation_p(base, cand, True, draws=100) < 0.06


def test_ties_raise_the_least_p() -> None:
    # every run scored the same: no labelling is more extreme than another
    flat = {"a": [1.0, 1.0, 1.0], "b": [1.0, 1.0, 1.0]}
    assert least_p(flat, {"a": [1.0], "b": [1.0]}, True) == 1.0
    # a: one of four runs differs (1 labelling in 4); b is all ties
    assert least_p({"a": [1.0, 1.0, 1.0], "b": [1.0] * 3}, {"a": [0.0], "b": [1.0]},
                   True) == pytest.approx(1 / 4)
    # two of four runs score 0: the candidate's one run is the worse in 2 labellings of 4
    assert least_p({"a": [1.0, 1.0, 0.0]}, {"a": [0.0]}, True) == pytest.approx(2 / 4)


def test_tarone_leaves_out_what_cannot_reach_significance() -> None:
    # K = 1: nothing reaches 0.05; K = 2: a and b reach 0.025, at most 2
    assert tarone({"a": 0.001, "b": 0.02, "c": 0.04, "d": 1.0}, 0.05) == ({"a", "b"}, 0.025)
    assert tarone({"a": 0.001, "b": 1.0}, 0.05) == ({"a"}, 0.05)
    assert tarone({"a": 1e-6, "b": 1e-6, "c": 1e-6}, 0.05) == ({"a", "b", "c"}, 0.05 / 3)
    assert tarone({"a": 0.2}, 0.05) == (set(), 0.05)
    assert tarone({}, 0.05) == (set(), 0.05)


def test_a_metric_every_run_scores_alike_does_not_raise_the_others_thresholds() -> None:
    # correctness p = 1/64 (3 documents, 1 of 4 labellings each): above 0.05/2, at 0.05/1
    base = {"correctness": {"a": [0.5, 0.6, 0.7], "b": [0.4, 0.5, 0.6], "c": [0.7, 0.8, 0.9]},
            "context_recall": {d: [1.0, 1.0, 1.0] for d in "abc"}}
    cand = {"correctness": {"a": [0.1], "b": [0.2], "c": [0.3]},
            "context_recall": {d: [1.0] for d in "abc"}}
    verdicts = {v.metric: v for v in decide(base, cand)}
    assert verdicts["correctness"].verdict == "worse" and verdicts["correctness"].tested
    assert "≤ Holm threshold 0.0500" in verdicts["correctness"].reason
    assert verdicts["context_recall"].verdict == "not worse"
    assert not verdicts["context_recall"].tested and verdicts["context_recall"].smallest_p == 1


def test_ties_count_against_the_candidate() -> None:
    flat = {"a": [0.5, 0.5, 0.5], "b": [0.5, 0.5, 0.5]}
    assert permutation_p(flat, {"a": [0.5], "b": [0.5]}, True) == 1.0


def test_forgetfulness_is_worse_when_it_rises() -> None:
    rng = np.random.default_rng(3)
    base = {"forgetfulness": runs(rng, 5, 3, shift=-0.2)}
    rise = decide(base, {"forgetfulness": runs(rng, len(base["forgetfulness"]), 2, 0.1)})
    fall = decide(base, {"forgetfulness": runs(rng, len(base["forgetfulness"]), 2, -0.3)})
    assert rise[0].verdict == "worse" and rise[0].delta > 0
    assert fall[0].verdict == "not worse" and fall[0].delta < 0 and fall[0].p > 0.5
    # the same numbers on a higher-is-better metric swap the verdicts
    retention = decide({"context_retention": base["forgetfulness"]},
                       {"context_retention": runs(rng, len(base["forgetfulness"]), 2, -0.3)})
    assert retention[0].verdict == "worse"


def test_holm_steps_down_and_stops_at_the_first_acceptance() -> None:
    p_values = {"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005}
    # d: 0.005 <= 0.05/4, a: 0.01 <= 0.05/3, c: 0.03 > 0.05/2 stops; b (<= 0.05) stays
    assert holm(p_values, 0.05) == {"d", "a"}
    assert holm({"x": 0.01, "y": 0.02}, 0.05) == {"x", "y"}
    assert holm({"x": 0.03, "y": 0.04}, 0.05) == set()
    assert holm({"x": 0.05}, 0.05) == {"x"}
    assert holm({}, 0.05) == set()


def test_an_unreachable_threshold_is_inconclusive_and_says_why() -> None:
    base = {m: {"a": [0.7, 0.8, 0.9], "b": [0.6, 0.7, 0.8], "c": [0.5, 0.6, 0.7]}
            for m in ("correctness", "faithfulness", "context_precision", "context_recall",
                      "context_retention", "forgetfulness")}
    # c's run stays in its band: not every run left its band (see the test below)
    worse_side = {"a": [0.1], "b": [0.1], "c": [0.55]}
    cand = {m: worse_side if m != "forgetfulness" else {"a": [0.95], "b": [0.9], "c": [0.65]}
            for m in base}
    verdicts = decide(base, cand)
    assert {v.verdict for v in verdicts} == {"inconclusive"}
    reason = verdicts[0].reason
    assert "3 documents × 3 baseline runs × 1 candidate run" in reason
    # six metrics that cannot reach 0.0156: none reaches 0.05 / 4 (Tarone's K = 4)
    assert "cannot reach p ≤ 0.0125" in reason and "0.0156" in reason
    assert "add documents or runs" in reason and not any(v.tested for v in verdicts)
    # with one metric the same design can decide
    assert decide({"correctness": base["correctness"]},
                  {"correctness": worse_side})[0].verdict == "worse"


def test_a_small_unconfirmed_drop_is_inconclusive() -> None:
    base = {"correctness": {f"d{i}": [0.60, 0.70, 0.80] for i in range(6)}}
    cand = {"correctness": {f"d{i}": [0.65, 0.72] for i in range(6)}}
    (verdict,) = decide(base, cand)
    assert verdict.delta < 0 and verdict.p < 0.5 and verdict.p > 0.05
    assert verdict.verdict == "inconclusive"
    assert "more documents or runs would decide" in verdict.reason
    assert "6 documents" in verdict.reason


def test_a_suspect_that_the_runs_clear_is_not_worse() -> None:
    # one document's first run left its band, the runs of all three lean better
    base = {"context_precision": {"a": [1.0, 1.0, 1.0], "b": [0.9, 0.8, 0.85],
                                  "c": [0.7, 0.9, 0.8]}}
    cand = {"context_precision": {"a": [0.94, 1.0, 1.0], "b": [1.0], "c": [1.0]}}
    (cleared,) = decide(base, cand, suspects={"context_precision"})
    assert cleared.delta > 0 and cleared.p > 0.5
    assert cleared.verdict == "not worse"
    # leaning worse, the same suspect stays inconclusive
    lower = {"context_precision": {"a": [0.94, 0.9, 1.0], "b": [0.8], "c": [0.8]}}
    (kept,) = decide(base, lower, suspects={"context_precision"})
    assert kept.delta < 0 and kept.verdict == "inconclusive"


def test_the_reason_names_uneven_runs() -> None:
    base = {"correctness": {"a": [0.8, 0.9], "b": [0.7, 0.8, 0.9]}}
    cand = {"correctness": {"a": [0.1], "b": [0.75]}}
    (verdict,) = decide(base, cand)
    assert verdict.verdict == "inconclusive"
    assert "2 documents × 2–3 baseline runs × 1 candidate run" in verdict.reason


def test_enumeration_and_monte_carlo_agree() -> None:
    rng = np.random.default_rng(4)
    base = runs(rng, 4, 3)
    cand = runs(rng, len(base), 2, shift=-0.04)  # 10^4 labellings
    exact = permutation_p(base, cand, True, draws=20000)
    draws = 4000
    sampled = permutation_p(base, cand, True, draws=draws, seed=7)
    assert 0.02 < exact < 0.98
    assert abs(sampled - exact) <= 4 * math.sqrt(exact * (1 - exact) / draws) + 1 / draws


def test_large_documents_are_sampled_by_permutation() -> None:
    rng = np.random.default_rng(5)
    base = runs(rng, 2, 20)
    assert permutation_p(base, runs(rng, len(base), 20, -0.3), True, draws=500) < 0.01
    assert permutation_p(base, runs(rng, len(base), 20, 0.3), True, draws=500) > 0.9


def test_ten_documents_take_well_under_a_second() -> None:
    rng = np.random.default_rng(6)
    base = runs(rng, 10, 3)
    cand = runs(rng, len(base), 3)
    start = time.perf_counter()
    p = permutation_p(base, cand, True)  # 20^10 labellings: Monte Carlo
    assert time.perf_counter() - start < 0.5
    assert 1 / 20001 <= p <= 1
    assert p == permutation_p(base, cand, True)  # seeded


def test_missing_metrics_and_documents_are_left_out() -> None:
    rng = np.random.default_rng(7)
    base = {m: runs(rng, 3, 3) for m in ("correctness", "faithfulness", "forgetfulness")}
    cand = {"correctness": runs(rng, len(base["correctness"]), 1),
            "forgetfulness": {"elsewhere": [0.2]}}
    assert [v.metric for v in decide(base, cand)] == ["correctness"]
    assert decide(base, {}) == []
    with pytest.raises(ValueError):
        permutation_p(base["correctness"], {"elsewhere": [0.5]}, True)


def test_nan_scores_are_dropped() -> None:
    base = {"a": [0.5, float("nan"), 0.7], "b": [0.4, 0.5, 0.6]}
    cand = {"a": [0.1], "b": [float("nan")]}
    assert least_p(base, cand, True) == pytest.approx(1 / 3)
    assert permutation_p(base, cand, True) == pytest.approx(1 / 3)


def paired_runs(rng: np.random.Generator, docs: int, n: int, shift: float = 0.0,
                ) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[int]]]:
    """Baseline and candidate runs at the same seeds: each seed draws facts of its own
    difficulty (a large effect both runs share) and each run adds a small noise of its own."""
    base, cand = {}, {}
    for d in range(docs):
        level = rng.normal(0.5, 0.25, n)  # what the seed's facts make of the run
        base[f"doc{d}"] = list(np.clip(level + rng.normal(0, 0.03, n), 0, 1))
        cand[f"doc{d}"] = list(np.clip(level + shift + rng.normal(0, 0.03, n), 0, 1))
    return base, cand, {f"doc{d}": list(range(n)) for d in range(docs)}


def test_pairs_of_unchanged_runs_rarely_give_a_small_p() -> None:
    rng = np.random.default_rng(7)
    alpha, datasets, small = 0.05, 400, 0
    for _ in range(datasets):
        base, cand, seeds = paired_runs(rng, 4, 3)  # 12 pairs: every sign pattern counted
        small += paired_p(paired(base, cand, seeds, seeds) or [], True) <= alpha
    assert small / datasets <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / datasets)


def test_pairing_sees_a_drop_that_the_seeds_own_spread_hides() -> None:
    rng = np.random.default_rng(8)
    base, cand, seeds = paired_runs(rng, 4, 3, shift=-0.08)
    assert paired_p(paired(base, cand, seeds, seeds) or [], True) < 0.01
    assert permutation_p(base, cand, True) > 0.05  # unpaired, the seeds' spread hides it
    (verdict,) = decide({"correctness": base}, {"correctness": cand},
                        seeds=({"correctness": seeds}, {"correctness": seeds}))
    assert verdict.verdict == "worse" and "4 documents × 3 runs paired by seed" in verdict.reason


def test_identical_paired_runs_are_not_worse() -> None:
    base = {"doc0": [0.5, 0.7, 1.0], "doc1": [0.0, 0.5, 1.0]}
    seeds = {"doc0": [0, 1, 2], "doc1": [0, 1, 2]}
    (verdict,) = decide({"correctness": base}, {"correctness": base},
                        seeds=({"correctness": seeds}, {"correctness": seeds}))
    assert (verdict.verdict, verdict.p, verdict.delta) == ("not worse", 1.0, 0.0)


def test_runs_at_seeds_the_baseline_lacks_are_tested_unpaired() -> None:
    base = {"doc0": [0.5, 0.7, 1.0], "doc1": [0.0, 0.5, 1.0]}
    cand = {"doc0": [0.4], "doc1": [0.3]}
    seeds = {"doc0": [0, 1, 2], "doc1": [0, 1, 2]}
    assert paired(base, cand, seeds, {"doc0": [0], "doc1": [100]}) is None
    assert [d.tolist() for d in paired(base, cand, seeds, {"doc0": [1], "doc1": [0]}) or []] \
        == [[pytest.approx(-0.3)], [pytest.approx(0.3)]]
    (verdict,) = decide({"correctness": base}, {"correctness": cand},
                        seeds=({"correctness": seeds},
                               {"correctness": {"doc0": [100], "doc1": [100]}}))
    assert verdict.p == permutation_p(base, cand, True)
    assert "paired" not in verdict.reason


def test_pairs_too_few_to_reach_alpha_over_the_metrics_are_tested_unpaired() -> None:
    # issue 53: 2 documents × 3 runs paired by seed reach 1/64 at best, not 0.05 / 4
    metrics = ("correctness", "faithfulness", "context_retention", "forgetfulness")
    base = {m: {"alpha": [1.0, 1.0, 1.0], "beta": [1.0, 1.0, 1.0]} for m in metrics}
    cand = {m: {"alpha": [0.0, 0.0, 0.0], "beta": [0.0, 0.0, 0.0]} for m in metrics}
    base["forgetfulness"] = cand["forgetfulness"]
    cand["forgetfulness"] = {"alpha": [1.0, 1.0, 1.0], "beta": [1.0, 1.0, 1.0]}
    seeds = {m: {"alpha": [0, 1, 2], "beta": [0, 1, 2]} for m in metrics}
    verdicts = decide(base, cand, seeds=(seeds, seeds))
    assert {v.verdict for v in verdicts} == {"worse"}
    assert all(v.p == v.smallest_p == pytest.approx(1 / 400) for v in verdicts)
    assert all(v.tested and "paired" not in v.reason for v in verdicts)
    # two metrics: the same pairs reach 0.05 / 2, and the pairs are tested
    two = decide({m: base[m] for m in metrics[:2]}, {m: cand[m] for m in metrics[:2]},
                 seeds=(seeds, seeds))
    assert all(v.p == pytest.approx(1 / 64) and "3 runs paired by seed" in v.reason
               for v in two)


def test_every_run_outside_its_band_is_worse_where_no_p_can_reach() -> None:
    # one document × 3 baseline runs × 1 candidate run: p is 1/4 at best
    base = {"correctness": {"a": [0.7, 0.8, 0.9]}, "forgetfulness": {"a": [0.1, 0.2, 0.3]}}
    cand = {"correctness": {"a": [0.1]}, "forgetfulness": {"a": [0.25]}}
    correctness, forgetfulness = decide(base, cand, suspects=["correctness", "forgetfulness"])
    assert correctness.verdict == "worse" and correctness.smallest_p == 0.25
    assert "every run of every document is outside its band" in correctness.reason
    assert "by chance at most 0.2500 of the time" in correctness.reason
    assert forgetfulness.verdict == "inconclusive"  # inside its band
    # inside the band widened by a margin, a run has not left it
    (wide, _) = decide(base, cand, suspects=["correctness"], margin=0.7)
    assert wide.verdict == "inconclusive"
    # a run that ties the band's edge has not left it either
    (edge,) = decide({"correctness": {"a": [0.7, 0.8]}}, {"correctness": {"a": [0.7]}},
                     suspects=["correctness"])
    assert edge.verdict == "inconclusive"


def test_many_pairs_are_sampled_and_agree_with_the_sign_test() -> None:
    diffs = [np.full(20, -0.1)]  # 20 pairs all worse: 2^20 patterns, drawn
    assert paired_p(diffs, True, draws=5000) == pytest.approx(1 / 5001)
