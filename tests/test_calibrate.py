"""``python -m pytest_ragdive calibrate``: a scripted judge of known accuracy measured on the
shipped cases, the estimate, the user's own cases, and the profile file it writes."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import pytest

from pytest_ragdive.__main__ import main
from pytest_ragdive.calibration.cases import Case, read, shipped
from pytest_ragdive.calibration.files import load
from pytest_ragdive.calibration.measure import Measured
from pytest_ragdive.engine.base.templates import one_line
from pytest_ragdive.llm.scripted import calls, scripted

#: the judged reply of a prompt, and what the right verdict of each shipped case's is
REPLY = re.compile(r"^(?:Reply to check|Latest reply): (.*)$", re.MULTILINE)


def truth(judgement: str) -> dict[str, Case]:
    return {one_line(c.answer or ""): c for c in shipped([judgement])}


def coin(text: str, sides: int) -> bool:
    """A fair, repeatable draw: True once in ``sides``."""
    return zlib.crc32(text.encode()) % sides == 0


def known_judge(name: str) -> str:
    """Right 9 times in 10 on correctness (wrong where a draw says so), a coin on context
    retention, whatever the case."""
    correct, retained = truth("correctness"), truth("context_retention")

    def yes(messages: list[dict[str, str]]) -> float:
        prompt = messages[-1]["content"]
        reply = REPLY.search(prompt).group(1)  # type: ignore[union-attr]
        if prompt.startswith("The conversation so far:"):
            said = coin(reply, 2)
            assert reply in retained
            return 0.9 if said != ("contradict something" in prompt) else 0.1
        right = correct[reply].label != coin(reply, 10)
        return 0.9 if right else 0.1

    return scripted({"YesNo": yes}, name=name)


def calibrate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """The command's exit code, and what it printed (errors after its output)."""
    code = main(["calibrate", "--cache-dir", str(tmp_path / "cache"),
                 "--out", str(tmp_path / "profiles.json"), *args])
    printed = capsys.readouterr()
    return code, printed.out + printed.err


def test_a_judge_of_known_accuracy_is_measured_and_its_chance_judgement_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = known_judge("known")
    code, out = calibrate(tmp_path, capsys, "--model", model, "--only", "correctness",
                          "--only", "context_retention")
    assert code == 0, out
    profile = load(tmp_path / "profiles.json").of(model)
    correctness, retention = (profile.judgement(n) for n in ("correctness", "context_retention"))
    # the draw made it wrong on 7 of the 72 right replies and 5 of the 72 wrong ones: 0.917
    assert correctness.balanced_accuracy == pytest.approx(0.9, abs=0.05)
    assert correctness.informative and correctness.cases == 144
    assert correctness.interval[0] <= 0.917 <= correctness.interval[1]  # type: ignore[index]
    assert not retention.informative
    assert retention.interval[0] < 0.5 < retention.interval[1]  # type: ignore[index]
    assert retention.auc_interval[0] < 0.5 < retention.auc_interval[1]  # type: ignore[index]
    assert list(profile.left_out()) == ["context_retention"]
    assert profile.calibrated and profile.judgement("forgetfulness").measured.startswith(
        "uncalibrated")  # not measured: the plain reading
    assert "| correctness | 144 |" in out and "| context_retention | 104 |" in out
    assert f"wrote the profile of {model} to {tmp_path / 'profiles.json'}" in out


def test_the_estimate_counts_the_calls_and_a_dry_run_makes_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = known_judge("estimated")
    code, out = calibrate(tmp_path, capsys, "--model", model, "--only", "correctness",
                          "--dry-run")
    assert code == 0
    found = re.search(r"estimate: (\d+) model calls", out)
    assert found is not None
    estimated = int(found.group(1))
    assert "no price known to litellm for this model" in out
    assert calls(model) == [] and not (tmp_path / "profiles.json").exists()
    # the whole key and each part the question asks: more calls than cases
    assert estimated > 144
    code, out = calibrate(tmp_path, capsys, "--model", model, "--only", "correctness")
    assert code == 0
    assert len(calls(model)) == estimated
    assert f"spent: {estimated} model calls (0 answered from the cache)" in out
    # a second calibration of the same model replays
    code, out = calibrate(tmp_path, capsys, "--model", model, "--only", "correctness")
    assert len(calls(model)) == estimated
    assert f"spent: 0 model calls ({estimated} answered from the cache)" in out


OWN = {"judgement": "correctness", "rag_input": "How tall is it?",
       "standalone_question": "How tall is the Alder Tower?",
       "ground_truth": "The Alder Tower is 120 m tall."}


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "line 2: not JSON"),
    (json.dumps({**OWN, "label": 1}), "line 2: answer: required for correctness"),
    (json.dumps({**OWN, "answer": "120 m.", "label": 2}),
     "line 2: label: Input should be a valid boolean"),
    (json.dumps({**OWN, "answer": "120 m.", "label": 1, "judgement": "tone"}),
     "line 2: judgement: unknown judgement 'tone'"),
    (json.dumps({**OWN, "answer": "120 m.", "label": 1, "ansewr": "x"}),
     "line 2: ansewr: Extra inputs are not permitted"),
])
def test_a_bad_line_of_ones_own_cases_is_an_error_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    cases = tmp_path / "my.jsonl"
    cases.write_text(json.dumps({**OWN, "answer": "It is 120 m tall.", "label": 1}) + "\n"
                     + line + "\n")
    model = known_judge("own-bad")
    code, out = calibrate(tmp_path, capsys, "--model", model, "--cases", str(cases))
    assert code == 2
    assert f"error: {cases} {message}" in out
    assert calls(model) == [] and not (tmp_path / "profiles.json").exists()


def test_ones_own_cases_replace_the_shipped_ones_of_their_judgement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {**OWN, "answer": "It is 120 m tall.", "label": 1}
    bad = {**OWN, "answer": "It is 80 m tall.", "label": 0}
    cases = tmp_path / "my.jsonl"
    cases.write_text("\n".join(json.dumps({**c, "group": g}) for c in (good, bad)
                               for g in ("a", "b")) + "\n")
    assert [c.label for c in read(cases)] == [True, True, False, False]

    def yes(messages: list[dict[str, str]]) -> float:
        return 0.9 if "Reply to check: It is 120 m tall." in messages[-1]["content"] else 0.2

    model = scripted({"YesNo": yes}, name="own")
    code, out = calibrate(tmp_path, capsys, "--model", model, "--cases", str(cases),
                          "--only", "correctness")
    assert code == 0, out
    measured = load(tmp_path / "profiles.json").of(model).judgement("correctness")
    assert (measured.cases, measured.balanced_accuracy) == (4, 1.0)
    assert "each of 2 groups held out" in measured.measured


def test_a_calibration_keeps_the_other_models_and_refuses_a_bad_profile_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = known_judge("first"), known_judge("second")
    for model in (first, second):
        assert calibrate(tmp_path, capsys, "--model", model, "--only", "correctness")[0] == 0
    assert set(load(tmp_path / "profiles.json").given) == {first, second}
    (tmp_path / "profiles.json").write_text('{"format": 1, "profiles": {"m": {"judgements": '
                                            '{"tone": {"informative": true}}}}}')
    code, out = calibrate(tmp_path, capsys, "--model", first, "--only", "correctness")
    assert code == 2
    assert "is not a judge profile file: profiles.m.judgements: unknown judgement 'tone'" in out


def test_a_judgement_right_on_a_few_cases_by_luck_is_not_informative() -> None:
    few = Measured("correctness", scores=(0.9, 0.9, 0.1, 0.9), yes=(1, 1, 0, 0),
                   held=(False,) * 4, groups=("a",) * 4)
    decided = few.decide("logprobs")
    assert (decided.threshold, decided.balanced_accuracy) == (0.5, 0.75)
    assert decided.interval[0] < 0.5 and not decided.informative  # type: ignore[index]
    assert decided.measured == "its cases (one group: none held out)"


def writer(name: str, leans: bool) -> str:
    """A generator whose follow-up message leans on the conversation ("And what about it?",
    about what the user asked last) or repeats its stand-alone question."""
    def next_question(messages: list[dict[str, str]]) -> dict[str, str]:
        asked = re.findall(r"^User: (.*)$", messages[-1]["content"], re.MULTILINE)[-1]
        return {"ground_truth": "A fact.", "standalone_question": asked,
                "rag_input": "And what about it?" if leans else asked,
                "question_type": "follow_up"}

    return scripted({"NextQuestion": next_question}, name=name)


@pytest.mark.parametrize(("leans", "rewritten", "kept"), [(True, False, 6), (False, True, 0)])
def test_a_generator_whose_own_messages_lean_on_the_conversation_is_not_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], leans: bool, rewritten: bool, kept: int
) -> None:
    model = writer(f"writer-{leans}", leans)
    code, out = calibrate(tmp_path, capsys, "--model", model, "--only", "follow_ups")
    assert code == 0, out
    profile = load(tmp_path / "profiles.json").of(model)
    assert profile.rewrite_follow_ups is rewritten
    assert profile.follow_ups.startswith(f"{kept} of 6 of its own follow-up messages leaned")
    assert f"follow-up messages: {kept} of 6 leaned on the conversation" in out
