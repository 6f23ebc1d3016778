"""Judge profiles: the shipped one is the package as it was for the embedded model, a model
with none is judged at the plain reading, and the method's aids follow the profile."""

from __future__ import annotations

from pathlib import Path

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.calibration.files import dumps, judges_digest, legacy, load, table
from pytest_ragdive.engine.base.models import DocumentGroup, GeneratedTurn, RagAnswer, Turn
from pytest_ragdive.engine.base.profile import (
    BINARY,
    JUDGEMENTS,
    MIN_ACCURACY,
    Judgement,
    Profile,
    ProfileError,
    Profiles,
    default_profile,
    parse,
    scope,
    shipped,
)
from pytest_ragdive.engine.base.settings import SETTINGS, scored_metrics
from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.engine.evaluation.binary import BINARY_JUDGES
from pytest_ragdive.engine.generation.generator import Writer, generate_turn
from pytest_ragdive.engine.roles.registry import role
from pytest_ragdive.engine.validation.validator import QUESTIONS, model_checks
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.model import Model
from pytest_ragdive.llm.scripted import calls, scripted
from pytest_ragdive.plugin.profiling import stale_profiles
from pytest_ragdive.plugin.records import ProducedBy

EMBEDDED = "embedded/qwen2.5-coder-1.5b"
ROOT = Path(__file__).resolve().parent.parent
DOC = ragdive.Document(id="tower", text="The Alder Tower is 120 m tall. It opened in 1931.")


def with_judgements(**judgements: Judgement) -> Profile:
    return Profile(judges=judges_digest(), calibrated="a test",
                   judgements={k.replace("__", "."): v for k, v in judgements.items()})


def test_the_shipped_embedded_profile_is_the_package_as_it_was() -> None:
    profile = Profiles().of(EMBEDDED)
    assert profile is shipped()[EMBEDDED] and legacy(EMBEDDED) is profile
    # the thresholds every model had, the metrics and checks left out, the rewriting
    assert {m: profile.threshold(m) for m in BINARY} == {m: j.threshold for m, j in BINARY_JUDGES.items()}
    assert list(profile.left_out()) == ["context_retention", "faithfulness", "context_precision",
                                        "context_recall"]
    assert [model_checks(Model(EMBEDDED), s) for s in ("auto", "all", "exact")] == [
        {}, dict.fromkeys(QUESTIONS, 0.5), {}]
    assert profile.rewrite_follow_ups
    assert profile.judges == judges_digest(), "the judges' prompts changed: calibrate again"
    assert sorted(profile.judgements) == sorted(JUDGEMENTS)
    # every decision follows from its own figures, by the rule calibrate applies
    for name, judgement in profile.judgements.items():
        informative = (judgement.balanced_accuracy or 0) >= MIN_ACCURACY and (
            judgement.interval is not None and judgement.interval[0] > 0.5)
        assert judgement.informative == informative, name
    assert "faithfulness, context_precision, context_recall and context_retention on the " \
           "embedded model" in SETTINGS["metrics"].help


def test_a_model_without_a_profile_is_judged_at_the_plain_reading() -> None:
    profile = Profiles().of("openai/gpt-4o-mini")
    assert profile == default_profile() and not profile.calibrated
    assert {profile.threshold(j) for j in JUDGEMENTS} == {0.5} and not profile.left_out()
    assert model_checks(Model("openai/gpt-4o-mini"), "auto") == dict.fromkeys(QUESTIONS, 0.5)
    assert profile.record().startswith("uncalibrated sha256 ")
    # before profiles it had the embedded model's thresholds: such a band is stale for it
    assert legacy("openai/gpt-4o-mini").record() != profile.record()


def test_a_band_from_before_profiles_reads_as_the_profile_it_was_scored_with() -> None:
    judges = {"evaluator": EMBEDDED, "generator": EMBEDDED, "validator": EMBEDDED}
    embedded = {"profiles": {EMBEDDED: shipped()[EMBEDDED].record()}}
    assert stale_profiles(ProducedBy(judges=judges), ProducedBy(**embedded)) is None
    recalibrated = {"profiles": {EMBEDDED: with_judgements().record()}}
    assert stale_profiles(ProducedBy(judges=judges), ProducedBy(**recalibrated)) == (
        f"profiles: {embedded['profiles']!r} -> {recalibrated['profiles']!r}")
    other = {"profiles": {"openai/x": default_profile().record()}}
    assert stale_profiles(ProducedBy(judges={"evaluator": "openai/x"}), ProducedBy(**other))
    assert stale_profiles(ProducedBy(**other, judges={"evaluator": "openai/x"}),
                          ProducedBy(**other)) is None


def test_a_metric_at_chance_is_left_out_of_its_models_default() -> None:
    at_chance = Judgement(informative=False, balanced_accuracy=0.52, interval=(0.4, 0.64),
                          cases=48)
    profiles = Profiles({"fake/m": with_judgements(correctness=at_chance)})
    assert "correctness" not in scored_metrics(None, 2, "t", "fake/m", profiles=profiles)
    assert "correctness" in scored_metrics(None, 2, "t", "fake/other", profiles=profiles)
    assert scored_metrics(("correctness",), 2, "t", "fake/m", profiles=profiles) == (
        "correctness",)  # chosen, it runs
    assert at_chance.why() == "balanced accuracy 0.520 [0.40, 0.64] on 48 cases"


class Bot:
    def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
        return ragdive.RagAnswer(answer="It is 120 m tall.", contexts=[DOC.text])


def test_the_evaluator_reads_its_thresholds_from_the_profile(tmp_path: Path) -> None:
    judge = scripted({"YesNo": lambda messages: 0.7}, name="seventy")

    def correctness(profiles: Profiles | None) -> float:
        dialogue = ragdive.run_dialogue(DOC, Bot(), judges=ragdive.Judges(judge), turns=1,
                                        metrics=["correctness"], cache_dir=tmp_path,
                                        profiles=profiles)
        return dialogue.scores["correctness"]

    assert correctness(None) == 1.0  # 0.7 passes the plain reading
    strict = with_judgements(correctness=Judgement(informative=True, threshold=0.8))
    assert correctness(Profiles({judge: strict})) == 0.0


def test_the_validator_asks_the_checks_its_profile_found_informative(tmp_path: Path) -> None:
    judge = scripted({"YesNo": lambda messages: 0.9}, name="checks")
    one = with_judgements(
        validator__standalone=Judgement(informative=True, threshold=0.95),
        **{c.replace(".", "__"): Judgement(informative=False)
           for c in JUDGEMENTS if c.startswith("validator.") and c != "validator.standalone"})
    profiles = Profiles({judge: one})
    with scope(profiles):
        assert model_checks(Model(judge), "auto") == {"standalone": 0.95}
    dialogue = ragdive.run_dialogue(DOC, Bot(), judges=ragdive.Judges(judge), turns=2,
                                    metrics=["correctness"], cache_dir=tmp_path,
                                    max_regenerations=0, profiles=profiles)
    # turn 2's one attempt fails the check its profile asks, at its threshold
    assert "standalone_question must name what it asks about" in dialogue.errors["generation"]
    assert "(P(yes) 0.90)" in dialogue.errors["generation"]
    asked = [m[-1]["content"] for s, m in calls(judge) if s == "YesNo"]
    validator_questions = [q for q, _ in QUESTIONS.values()]
    assert {q for q in validator_questions if any(q in p for p in asked)} == {
        QUESTIONS["standalone"][0]}


def test_a_message_is_rewritten_only_for_a_model_whose_profile_needs_it(tmp_path: Path) -> None:
    own = {"ground_truth": "It opened in 1931.", "question_type": "follow_up",
           "standalone_question": "When did the Alder Tower open?",
           "rag_input": "When did the Alder Tower open?"}
    model = Model(scripted({"NextQuestion": lambda messages: own}, name="writer"))
    first = GeneratedTurn(rag_input="How tall is the Alder Tower?", question_type="initial",
                          standalone_question="How tall is the Alder Tower?",
                          ground_truth="It is 120 m tall.",
                          evidence="The Alder Tower is 120 m tall.")
    history = [Turn(index=1, generated=first, answer=RagAnswer(answer="It is 120 m tall."))]
    client = LLMClient(ResponseCache(tmp_path, "new"))

    def message(profiles: Profiles) -> str:
        async def write() -> str:
            with scope(profiles):
                turn = await generate_turn(Writer(client, model, 0.7),
                                           group=DocumentGroup.of(DOC),
                                           role=role("precise"), history=history, seed=0)
            return turn.rag_input
        return run_blocking(write())

    assert message(Profiles()) == "When did it open?"  # the default rewrites it
    writes_well = default_profile().model_copy(update={"rewrite_follow_ups": False})
    assert message(Profiles({model.name: writes_well})) == own["rag_input"]


TOO_HIGH = ('{"format": 1, "profiles": {"m": {"judgements": {"correctness": '
            '{"informative": true, "threshold": 1.5}}}}}')


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "is not a judge profile file: Invalid JSON"),
    ('{"format": 2, "profiles": {}}', "format: Input should be 1"),
    (TOO_HIGH,
     "profiles.m.judgements.correctness.threshold: Input should be less than or equal to 1"),
    ('{"format": 1, "profiles": {"m": {"judgements": {"correctness": {}}}}}',
     "profiles.m.judgements.correctness.informative: Field required"),
])
def test_a_malformed_profile_file_names_the_field(text: str, message: str) -> None:
    with pytest.raises(ProfileError) as raised:
        parse(text, "p.json")
    assert message in str(raised.value)
    assert "python -m pytest_ragdive calibrate --model <model> --out p.json" in str(raised.value)


def test_a_stale_or_missing_profile_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    with pytest.raises(ProfileError, match="cannot be read"):
        load(path)
    path.write_text(dumps({"fake/m": with_judgements().model_copy(
        update={"judges": "sha256 000000000000"})}))
    with pytest.raises(ProfileError) as raised:
        load(path)
    assert (f"the judge profile of fake/m in {path} is stale: it was calibrated with other "
            f"judge prompts (sha256 000000000000 -> {judges_digest()})") in str(raised.value)
    assert f"--model fake/m --out {path}" in str(raised.value)


def test_the_profile_file_round_trips_and_the_docs_show_the_embedded_one() -> None:
    assert parse(dumps(shipped()), "x") == shipped()
    assert (ROOT / "pytest_ragdive/engine/base/profiles.json").read_text() == dumps(shipped())
    page = (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
    assert table(shipped()[EMBEDDED]) in page, "docs/judges.md shows another embedded profile"
