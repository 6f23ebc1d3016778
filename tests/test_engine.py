"""The engine on its own: stages, regeneration, scoring and failures, with scripted models."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.dialogue import run_blocking
from pytest_ragdive.testing import calls, scripted

DOC = ragdive.Document(id="tower", text="The Alder Tower is 120 m tall. It opened in 1931.")


class Bot:
    """Answers from a fixed context and remembers how much history it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
        self.seen.append((question, len(history)))
        return ragdive.RagAnswer(answer=f"It is 120 m. ({question})", contexts=[DOC.text])


def checklist(**failed: object) -> dict:
    """A validator reply: every check passes unless given here."""
    checks = dict.fromkeys(("refers_back", "standalone", "same_meaning", "answer_supported",
                            "type_fits", "reads_naturally"), True)
    return {**checks, "feedback": "", **failed}


def run(model: str, adapter: object, tmp_path: Path, **options: object) -> ragdive.Dialogue:
    options.setdefault("turns", 3)
    return ragdive.run_dialogue(
        DOC, adapter, judges=ragdive.Judges(model), cache_dir=tmp_path / "cache", **options
    )


def test_dialogue_produces_all_six_scores(tmp_path: Path) -> None:
    bot = Bot()
    dialogue = run(scripted(), bot, tmp_path)
    assert dialogue.errors == {}
    assert set(dialogue.scores) == set(ragdive.METRICS)
    assert all(0.0 <= v <= 1.0 for v in dialogue.scores.values())
    assert [t.generated.question_type for t in dialogue.turns] == ["initial", "follow_up", "follow_up"]
    # the RAG gets the context-dependent question and the visible history, never the rewrite
    assert bot.seen == [("What is the topic?", 0), ("And what else about it?", 2),
                        ("And what else about it?", 4)]
    first = dialogue.turns[0].generated
    assert first.rag_input == first.standalone_question
    assert "forgetfulness" not in dialogue.turns[0].judgements  # multi-turn metrics from turn 2
    assert dialogue.usage.calls > 0 and dialogue.usage.prompt_tokens > 0
    assert ragdive.Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue


def test_scores_average_the_turn_verdicts(tmp_path: Path) -> None:
    def ruling(messages: list[dict]) -> dict:
        prompt = messages[-1]["content"]
        if prompt.startswith("Judge whether an assistant's answer is correct"):
            # the first turn's answer is wrong, the others right
            return {"reason": "r", "verdict": 0 if "What is the topic?" in prompt else 1}
        if prompt.startswith("Judge whether an assistant forgot"):
            return {"reason": "forgot", "verdict": 1}
        return {"reason": "kept", "verdict": 1}

    dialogue = run(scripted({"Ruling": ruling}), Bot(), tmp_path)
    assert dialogue.scores["correctness"] == pytest.approx(2 / 3)
    assert dialogue.scores["forgetfulness"] == 1.0
    assert dialogue.turns[1].judgements["forgetfulness"].reason == "forgot"


def test_invalid_turn_is_regenerated_with_the_feedback(tmp_path: Path) -> None:
    verdicts = iter([checklist(answer_supported=False, feedback="say which tower")])

    def validator(messages: list[dict]) -> dict:
        return next(verdicts, checklist())

    def first(messages: list[dict]) -> dict:
        retry = "rejected your previous attempt" in messages[-1]["content"]
        question = "How tall is the Alder Tower?" if retry else "How tall is it?"
        return {"question": question, "ground_truth": "120 m"}

    model = scripted({"Checklist": validator, "FirstQuestion": first})
    dialogue = run(model, Bot(), tmp_path, turns=2)
    assert dialogue.errors == {}
    rejected = dialogue.turns[0].rejections
    assert [r.verdict.categories for r in rejected] == [["ground_truth"]]
    generator_prompts = [m[-1]["content"] for s, m in calls(model) if s == "FirstQuestion"]
    assert len(generator_prompts) == 2
    assert "say which tower" not in generator_prompts[0]
    assert "say which tower" in generator_prompts[1]


def test_exhausted_regenerations_end_the_dialogue_naming_turn_and_feedback(tmp_path: Path) -> None:
    model = scripted({"Checklist": lambda m: checklist(
        answer_supported=False, feedback="the answer key is wrong")})
    dialogue = run(model, Bot(), tmp_path, max_regenerations=2)
    assert dialogue.turns == [] and dialogue.scores == {}
    error = dialogue.errors["dialogue"]
    assert "turn 1" in error and "all 3 attempts" in error and "the answer key is wrong" in error


def test_validation_once_checks_the_first_attempt_and_uses_one_regeneration(
    tmp_path: Path,
) -> None:
    # a validator that rejects everything: "until_valid" would end the dialogue
    model = scripted({"Checklist": lambda m: checklist(refers_back=False, feedback="use 'it'")})
    dialogue = run(model, Bot(), tmp_path, validation="once", max_regenerations=5)
    assert dialogue.errors == {}
    assert [len(t.rejections) for t in dialogue.turns] == [0, 1, 1]
    assert [t.validated for t in dialogue.turns] == [True, False, False]
    assert dialogue.turns[1].rejections[0].verdict.feedback == "use 'it'"
    assert len([1 for s, _ in calls(model) if s == "Checklist"]) == 3  # one check per turn
    with pytest.raises(ValueError, match="validation must be one of until_valid, once"):
        run(model, Bot(), tmp_path, validation="never")


def test_unparseable_validator_reply_is_a_rejection_not_a_pass(tmp_path: Path) -> None:
    model = scripted({"Checklist": lambda m: "sure, looks fine!"})
    dialogue = run(model, Bot(), tmp_path, max_regenerations=0)
    assert "could not be read" in dialogue.errors["dialogue"]
    # the client showed the model its error before giving up
    validator_calls = [m for s, m in calls(model) if s == "Checklist"]
    assert len(validator_calls) == 3
    assert "That reply is invalid" in validator_calls[1][-1]["content"]


def test_malformed_judge_reply_is_retried_then_scored(tmp_path: Path) -> None:
    replies = iter(['{"reason": "x"}'])  # missing verdict once

    def ruling(messages: list[dict]) -> object:
        return next(replies, {"reason": "fine", "verdict": 1})

    dialogue = run(scripted({"Ruling": ruling}), Bot(), tmp_path, turns=1,
                   metrics=["correctness"])
    assert dialogue.scores == {"correctness": 1.0}


def test_uncomputable_metric_is_an_error_never_nan_or_zero(tmp_path: Path) -> None:
    class NoContexts(Bot):
        def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
            return ragdive.RagAnswer(answer="It is tall.", contexts=[])

    model = scripted({"Ruling": lambda m: "no json here"})
    dialogue = run(model, NoContexts(), tmp_path, turns=2,
                   metrics=["correctness", "faithfulness", "forgetfulness"])
    assert dialogue.scores == {}
    assert "no contexts" in dialogue.errors["faithfulness"]
    assert "no valid Ruling" in dialogue.errors["correctness"]
    assert "turn 2" in dialogue.errors["forgetfulness"]
    assert dialogue.turns[0].judgements["correctness"].score is None


def test_adapter_that_raises_ends_only_its_dialogue(tmp_path: Path) -> None:
    class Broken(Bot):
        def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
            if history:
                raise ConnectionError("vector store down")
            return super().answer(question, history)

    other = ragdive.Document(id="other", text="Another text.")
    judges = ragdive.Judges(scripted())

    async def both() -> list[ragdive.Dialogue]:
        good = ragdive.arun_dialogue(other, Bot(), judges=judges, turns=2,
                                     cache_dir=tmp_path / "c")
        bad = ragdive.arun_dialogue(DOC, Broken(), judges=judges, turns=2,
                                    cache_dir=tmp_path / "c")
        return list(await asyncio.gather(good, bad))

    good, bad = run_blocking(both())
    assert good.errors == {} and len(good.turns) == 2
    error = bad.errors["dialogue"]
    assert "turn 2" in error and "ConnectionError: vector store down" in error
    assert "And what else about it?" in error


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_adapter_that_hangs_times_out(tmp_path: Path, kind: str) -> None:
    class SyncHang(Bot):
        def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
            time.sleep(30)
            raise AssertionError("unreachable")

    class AsyncHang(Bot):
        async def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
            await asyncio.sleep(30)
            raise AssertionError("unreachable")

    start = time.monotonic()
    adapter = SyncHang() if kind == "sync" else AsyncHang()
    dialogue = run(scripted(), adapter, tmp_path, adapter_timeout=0.3)
    assert time.monotonic() - start < 10
    assert "turn 1" in dialogue.errors["dialogue"]
    assert "did not answer 'What is the topic?' within 0.3 s" in dialogue.errors["dialogue"]


def test_async_adapter_and_start_hook(tmp_path: Path) -> None:
    class Session:
        def __init__(self) -> None:
            self.questions: list[str] = []

        async def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
            self.questions.append(question)
            return ragdive.RagAnswer(answer="120 m", contexts=["c"])

    class Server:
        def __init__(self) -> None:
            self.sessions: list[Session] = []

        def start(self) -> Session:
            self.sessions.append(Session())
            return self.sessions[-1]

        def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
            raise AssertionError("the session answers, not the server")

    server = Server()
    dialogue = run(scripted(), server, tmp_path, turns=2, metrics=["correctness"])
    assert dialogue.errors == {}
    assert len(server.sessions) == 1 and len(server.sessions[0].questions) == 2


def test_unknown_role_and_metric_fail_before_any_call(tmp_path: Path) -> None:
    model = scripted()
    with pytest.raises(ValueError, match="unknown role 'precsie'"):
        run(model, Bot(), tmp_path, role="precsie")
    with pytest.raises(ValueError, match="unknown metric"):
        run(model, Bot(), tmp_path, metrics=["helpfulness"])
    assert calls(model) == []


def test_free_text_role_reaches_the_generator(tmp_path: Path) -> None:
    model = scripted()
    run(model, Bot(), tmp_path, turns=1, role="a retired engineer who loves exact numbers")
    prompt = calls(model)[0][1][-1]["content"]
    assert "a retired engineer who loves exact numbers" in prompt


def test_run_dialogues_shares_one_limit(tmp_path: Path) -> None:
    docs = [ragdive.Document(id=f"d{i}", text=f"Fact {i}.") for i in range(3)]
    dialogues = run_blocking(ragdive.arun_dialogues(
        docs, Bot(), judges=ragdive.Judges(scripted()), concurrency=2, turns=1,
        metrics=["correctness"], cache_dir=tmp_path / "c"))
    assert [d.document_id for d in dialogues] == ["d0", "d1", "d2"]
    assert all(d.scores == {"correctness": 1.0} for d in dialogues)


def test_validator_checks_that_do_not_apply_to_turn_one_are_ignored(tmp_path: Path) -> None:
    def validator(messages: list[dict]) -> dict:
        first_turn = "Generated turn 1:" in messages[-1]["content"]
        # a confused judge fails the follow-up checks on turn 1: they do not apply there
        return checklist(refers_back=False) if first_turn else checklist()

    turns = iter([checklist(refers_back=False, feedback="refer back to the tower")])
    dialogue = run(scripted({"Checklist": validator}), Bot(), tmp_path, turns=1,
                   metrics=["correctness"])
    assert dialogue.errors == {} and dialogue.turns[0].rejections == []

    def follow_up(messages: list[dict]) -> dict:
        retry = "rejected your previous attempt" in messages[-1]["content"]
        return {"standalone_question": "When did the Alder Tower open?",
                "rag_input": "When did it open?" if retry else "When did the Alder Tower open?",
                "ground_truth": "1931", "question_type": "follow_up"}

    model = scripted({"NextQuestion": follow_up,
                      "Checklist": lambda m: checklist() if "Generated turn 1:" in
                      m[-1]["content"] else next(turns, checklist())})
    second = run(model, Bot(), tmp_path / "2", turns=2, metrics=["correctness"])
    assert [r.verdict.categories for r in second.turns[1].rejections] == [
        ["rag_input_not_connected"]]


def test_transient_provider_errors_are_retried(tmp_path: Path) -> None:
    failures = iter([True])

    def flaky(messages: list[dict]) -> dict:
        if next(failures, False):
            raise ConnectionError("provider hiccup")
        return {"reason": "fine", "verdict": 1}

    dialogue = run(scripted({"Ruling": flaky}), Bot(), tmp_path, turns=1,
                   metrics=["correctness"])
    assert dialogue.errors == {} and dialogue.scores == {"correctness": 1.0}


def test_missing_recording_in_replay_mode_names_model_and_prompt(tmp_path: Path) -> None:
    dialogue = run(scripted(name="replay"), Bot(), tmp_path, record_mode="none")
    error = dialogue.errors["dialogue"]
    assert "no recorded response for model 'fake/replay'" in error
    assert "You play a user" in error and "--ragdive-record-mode=new" in error
