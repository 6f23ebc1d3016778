"""Band files: what they hold and how a score is compared with them."""

from __future__ import annotations

from pytest_ragdive.plugin import bands as baseline
from pytest_ragdive.plugin.records import ProducedBy


def test_a_recorded_run_is_inside_its_own_rounded_band() -> None:
    # 13/18 is stored as 0.7222: the run that recorded it must still fit its band
    runs = {"context_precision": [13 / 18, 1.0], "faithfulness": [0.99996, 0.99996]}
    doc = baseline.band(runs, ProducedBy())
    assert doc.metrics["context_precision"].min == 0.7222
    assert doc.metrics["faithfulness"].model_dump() == {
        "min": 1.0, "max": 1.0, "mean": 1.0, "runs": [1.0, 1.0]}
    for run in range(2):
        scores = {metric: values[run] for metric, values in runs.items()}
        assert baseline.compare(doc, scores, margin=0.0) == []


def test_scores_outside_the_band_are_worse_or_better_by_the_metric_direction() -> None:
    doc = baseline.band({"correctness": [0.6, 0.8], "forgetfulness": [0.2, 0.4]},
                        ProducedBy())
    deviations = baseline.compare(doc, {"correctness": 0.5, "forgetfulness": 0.1}, margin=0.0)
    assert [(d.metric, d.worse) for d in deviations] == [("correctness", True),
                                                          ("forgetfulness", False)]
    assert baseline.compare(doc, {"correctness": 0.5}, margin=0.1) == []
    assert baseline.compare(doc, {"correctness": 0.4999}, margin=0.1)[0].worse
