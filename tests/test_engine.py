"""The engine on its own: stages, regeneration, scoring and failures, with scripted models."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.engine.base.metrics import ROLE_METRICS
from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.engine.validation.validator import QUESTIONS
from pytest_ragdive.llm.scripted import calls, max_in_flight, scripted

DOC = ragdive.Document(id="tower", text="The Alder Tower is 120 m tall. It opened in 1931.")
#: the scripted generator's first question about DOC
FIRST = "What is the topic of The Alder Tower is 120?"


class Bot:
    """Answers from a fixed context and remembers how much history it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
        self.seen.append((question, len(history)))
        return ragdive.RagAnswer(answer=f"It is 120 m. ({question})", contexts=[DOC.text])


def validator(*failing: str, p_no: float = 0.1) -> Callable[[list[dict]], float]:
    """A validator model's P(yes): the named checks fail (their question is answered no)."""
    def answer(messages: list[dict]) -> float:
        prompt = messages[-1]["content"]
        return p_no if any(QUESTIONS[c][0] in prompt for c in failing) else 0.9
    return answer


def run(model: str, adapter: object, tmp_path: Path, **options: object) -> ragdive.Dialogue:
    options.setdefault("turns", 3)
    return ragdive.run_dialogue(
        DOC, adapter, judges=ragdive.Judges(model), cache_dir=tmp_path / "cache", **options
    )


def test_dialogue_produces_all_six_scores(tmp_path: Path) -> None:
    bot = Bot()
    dialogue = run(scripted(), bot, tmp_path)
    assert dialogue.errors == {}
    # the six of RAG-DIVE; a role's own metric only in its role (test_mistaken.py)
    assert set(dialogue.scores) == set(ragdive.METRICS) - set(ROLE_METRICS)
    assert all(0.0 <= v <= 1.0 for v in dialogue.scores.values())
    assert [t.generated.question_type for t in dialogue.turns] == ["initial", "follow_up", "follow_up"]
    # the RAG gets the context-dependent question and the visible history, never the rewrite
    assert bot.seen == [(FIRST, 0), ("And the second fact about it?", 2),
                        ("And the third fact about it?", 4)]
    first = dialogue.turns[0].generated
    assert first.rag_input == first.standalone_question
    assert first.evidence == "The Alder Tower is 120 m tall."
    assert "forgetfulness" not in dialogue.turns[0].judgements  # multi-turn metrics from turn 2
    assert dialogue.usage.calls > 0 and dialogue.usage.prompt_tokens > 0
    assert ragdive.Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue


def test_scores_average_the_turn_verdicts_with_the_paper_directions(tmp_path: Path) -> None:
    retention_prompts = []

    def yes(messages: list[dict]) -> float:
        prompt = messages[-1]["content"]
        if "Reply to check" in prompt:  # the first turn's answer is wrong, the others right
            return 0.2 if FIRST in prompt else 0.8
        if prompt.startswith("The conversation so far:"):  # context retention
            retention_prompts.append(prompt)
            if "User: And the second fact about it?\nLatest reply:" in prompt:
                return 0.8 if "contradict something" in prompt else 0.2
            return 0.4 if "contradict something" in prompt else 0.8  # turn 3: (0.8 + 0.6) / 2
        if prompt.startswith("Question: What is the third fact") and "Reply: It is" in prompt:
            return 0.3  # turn 3's reply misses what the user meant (its answer key: 0.9)
        return 0.9

    dialogue = run(scripted({"YesNo": yes}), Bot(), tmp_path)
    assert dialogue.scores["correctness"] == pytest.approx(2 / 3)
    # 0 is best: turn 2 kept the thread, turn 3 lost it
    assert dialogue.scores["forgetfulness"] == 0.5
    assert dialogue.turns[2].judgements["forgetfulness"].reason == (
        "the reply does not answer what the user meant (P(yes) 0.30, 0.90 for the answer key)")
    assert dialogue.turns[1].judgements["forgetfulness"].reason.endswith(
        "(P(yes) 0.90, 0.90 for the answer key)")
    # retention is another judgement: turn 2 contradicted the conversation, turn 3 did not
    assert dialogue.scores["context_retention"] == 0.5
    assert [t.judgements["context_retention"].score for t in dialogue.turns[1:]] == [0.0, 1.0]
    assert dialogue.turns[1].judgements["context_retention"].reason == (
        "the reply contradicts something said earlier in the conversation (P(yes) 0.20)")
    # a debiased judge averages its question's P(yes) and its negation's P(no)
    assert dialogue.turns[2].judgements["context_retention"].reason.endswith("(P(yes) 0.70)")
    # and it reads the whole conversation before the turn
    turn_3 = [p for p in retention_prompts if "User: And the third fact about it?\nLatest" in p]
    assert len(turn_3) == 2  # the question and its negation
    assert all(f"User: {FIRST}" in p and "User: And the second fact about it?" in p
               for p in turn_3)


TALL = {"question": "How tall is the Alder Tower?", "evidence": "The Alder Tower is 120 m tall.",
        "ground_truth": "120 m."}


def test_turn_failing_an_exact_check_is_regenerated_with_the_reason(tmp_path: Path) -> None:
    def next_question(messages: list[dict]) -> dict:
        if "rejected your previous attempt" in messages[-1]["content"]:
            return {"standalone_question": "When did the Alder Tower open?",
                    "rag_input": "When did the Alder Tower open?",
                    "evidence": "It opened in 1931.", "ground_truth": "In 1931.",
                    "question_type": "follow_up"}
        # a question about something the conversation never mentioned
        return {"standalone_question": "Who designed the harbour bridge?",
                "rag_input": "Who designed the harbour bridge?",
                "evidence": "It opened in 1931.", "ground_truth": "In 1931.",
                "question_type": "follow_up"}

    model = scripted({"FirstQuestion": lambda m: TALL, "NextQuestion": next_question})
    dialogue = run(model, Bot(), tmp_path, turns=2)
    assert dialogue.errors == {}
    rejected = dialogue.turns[1].rejections
    # nor about the fact the plugin gave ("It opened in 1931.")
    assert [r.validation.categories for r in rejected] == [["ground_truth",
                                                         "rag_input_not_connected"]]
    assert "can be understood without the conversation" in rejected[0].validation.feedback
    assert "asks nothing that the fact states" in rejected[0].validation.feedback
    # the model repeated the subject; the message refers to it instead
    assert dialogue.turns[1].generated.rag_input == "When did it open?"
    assert dialogue.turns[1].generated.standalone_question == "When did the Alder Tower open?"
    prompts = [m[-1]["content"] for s, m in calls(model) if s == "NextQuestion"]
    assert len(prompts) == 2 and "can be understood without the conversation" in prompts[1]


def test_invented_answer_key_and_repeated_question_are_rejected(tmp_path: Path) -> None:
    attempts = iter([
        {"evidence": "Ada Lind designed the tower.", "ground_truth": "Ada Lind."},  # invented
        {"evidence": "The Alder Tower is 120 m tall.", "ground_truth": "125 m."},  # not its figure
    ])

    def first(messages: list[dict]) -> dict:
        return {"question": "How tall is the Alder Tower?",
                **next(attempts, {"evidence": "The Alder Tower is 120 m tall.",
                                  "ground_truth": "120 m."})}

    def again(messages: list[dict]) -> dict:  # asks turn 1's question again
        return {"standalone_question": "How tall is the Alder Tower?", "rag_input": "How tall?",
                "evidence": "The Alder Tower is 120 m tall.", "ground_truth": "120 m.",
                "question_type": "follow_up"}

    dialogue = run(scripted({"FirstQuestion": first, "NextQuestion": again}), Bot(), tmp_path,
                   turns=2, max_regenerations=3)
    feedback = [r.validation.feedback for r in dialogue.turns[0].rejections]
    assert "not copied from the source text" in feedback[0]
    assert "ground_truth states 125" in feedback[1]
    assert dialogue.turns[0].generated.ground_truth == "120 m."
    assert "asks again what turn 1 asked" in dialogue.errors["generation"]


def test_invalid_turn_is_regenerated_with_the_validators_feedback(tmp_path: Path) -> None:
    def first(messages: list[dict]) -> dict:
        retry = "rejected your previous attempt" in messages[-1]["content"]
        return {**TALL, "question": "How tall is the Alder Tower?" if retry else "How tall?"}

    def yes(messages: list[dict]) -> float:
        prompt = messages[-1]["content"]
        return 0.1 if "stand-alone question): How tall?" in prompt else 0.9

    model = scripted({"FirstQuestion": first, "YesNo": yes})
    dialogue = run(model, Bot(), tmp_path, turns=1, metrics=["correctness"])
    assert dialogue.errors == {}
    [rejected] = dialogue.turns[0].rejections
    assert rejected.validation.categories == ["ground_truth"]
    generator_prompts = [m[-1]["content"] for s, m in calls(model) if s == "FirstQuestion"]
    assert len(generator_prompts) == 2
    assert "the source text states (P(yes) 0.10)" in generator_prompts[1]
    assert dialogue.turns[0].generated.rag_input == "How tall is the Alder Tower?"


def test_exhausted_regenerations_end_the_dialogue_naming_turn_and_feedback(tmp_path: Path) -> None:
    model = scripted({"YesNo": validator("answer_supported")})
    dialogue = run(model, Bot(), tmp_path, max_regenerations=2)
    assert dialogue.turns == [] and dialogue.scores == {}
    error = dialogue.errors["generation"]
    assert "turn 1" in error and "all 3 attempts" in error
    assert "ground_truth must answer the question" in error


def test_validation_once_judges_one_attempt_and_takes_the_next_that_passes_exact_checks(
    tmp_path: Path,
) -> None:
    # a validator model that rejects every follow-up: "until_valid" would end the dialogue
    model = scripted({"YesNo": validator("standalone")})
    dialogue = run(model, Bot(), tmp_path, validation="once", max_regenerations=5)
    assert dialogue.errors == {}
    assert [len(t.rejections) for t in dialogue.turns] == [0, 1, 1]
    assert [t.validated for t in dialogue.turns] == [True, False, False]
    assert "standalone_question must name" in dialogue.turns[1].rejections[0].validation.feedback
    standalone_asked = [m for s, m in calls(model)
                        if s == "YesNo" and QUESTIONS["standalone"][0] in m[-1]["content"]]
    assert len(standalone_asked) == 2  # one judged attempt per follow-up turn
    with pytest.raises(ValueError, match="validation=.never. is not .until_valid. or .once."):
        run(model, Bot(), tmp_path, validation="never")


def test_validation_once_still_applies_the_exact_checks(tmp_path: Path) -> None:
    def next_question(messages: list[dict]) -> dict:  # never about the conversation
        return {"standalone_question": "When did the harbour bridge open?",
                "rag_input": "When did the harbour bridge open?", "evidence": "It opened in 1931.",
                "ground_truth": "In 1931.", "question_type": "follow_up"}

    model = scripted({"FirstQuestion": lambda m: TALL, "NextQuestion": next_question,
                      "YesNo": validator("standalone")})
    dialogue = run(model, Bot(), tmp_path, turns=2, validation="once", max_regenerations=2)
    # every attempt was sent back; "once" then takes the last one, since its only fault
    # was not leaning on the conversation, and marks it unvalidated
    assert dialogue.errors == {}
    second = dialogue.turns[1]
    assert not second.validated and len(second.rejections) == 3
    assert all(r.validation.categories == ["rag_input_not_connected"] for r in second.rejections)
    assert "without the conversation" in second.rejections[0].validation.feedback
    # nor is a message that is no question (the model copied its fact)
    said = scripted({"FirstQuestion": lambda m: TALL, "NextQuestion": lambda m: {
        **next_question(m), "rag_input": "The harbour bridge opened in 1931."}})
    stated = run(said, Bot(), tmp_path, turns=2, validation="once", max_regenerations=1)
    assert "is not a question" in stated.errors["generation"]
    # an invented answer key is never taken
    invented = scripted({"FirstQuestion": lambda m: {**TALL, "ground_truth": "150 m."}})
    failed = run(invented, Bot(), tmp_path, turns=1, validation="once", max_regenerations=1)
    assert "ground_truth states 150" in failed.errors["generation"]


@pytest.mark.parametrize(("word", "score"), [("Yes", 1.0), ("No.", 0.0)])
def test_judge_without_logprobs_is_read_from_its_text(tmp_path: Path, word: str,
                                                      score: float) -> None:
    def answer(messages: list[dict]) -> object:
        # a provider without logprobs answers in words; the validator's checks say yes
        return word if messages[-1]["content"].startswith("Question:") else "Yes"

    dialogue = run(scripted({"YesNo": answer}), Bot(), tmp_path, turns=1,
                   metrics=["correctness"], validation="once")
    assert dialogue.errors == {}
    assert dialogue.turns[0].judgements["correctness"].score == score


def test_uncomputable_metric_is_an_error_never_nan_or_zero(tmp_path: Path) -> None:
    class NoContexts(Bot):
        def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
            return ragdive.RagAnswer(answer="It is tall.", contexts=[])

    def yes(messages: list[dict]) -> object:
        prompt = messages[-1]["content"]
        return 0.9 if prompt.startswith("Source text") else "maybe"

    model = scripted({"YesNo": yes})
    dialogue = run(model, NoContexts(), tmp_path, turns=2,
                   metrics=["correctness", "faithfulness", "forgetfulness"])
    assert dialogue.scores == {}
    assert "no contexts" in dialogue.errors["faithfulness"]
    assert "answered a yes/no question with 'maybe'" in dialogue.errors["correctness"]
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
    assert "And the second fact about it?" in error


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
    assert f"did not answer {FIRST!r} within 0.3 s" in dialogue.errors["dialogue"]


@pytest.mark.parametrize("fault", ["raises", "hangs"])
def test_a_start_hook_that_raises_or_hangs_ends_only_its_dialogue(tmp_path: Path,
                                                                   fault: str) -> None:
    class BadStart(Bot):
        def start(self) -> None:
            if fault == "hangs":
                time.sleep(30)
            raise ConnectionError("session service down, token=abcdef123456")

    other = ragdive.Document(id="other", text="Another text.")
    judges = ragdive.Judges(scripted())

    async def both() -> list[ragdive.Dialogue]:
        return list(await asyncio.gather(*(
            ragdive.arun_dialogue(doc, adapter, judges=judges, turns=2, adapter_timeout=0.3,
                                  cache_dir=tmp_path / "c")
            for doc, adapter in ((other, Bot()), (DOC, BadStart())))))

    started = time.monotonic()
    good, bad = run_blocking(both())
    assert time.monotonic() - started < 10
    assert good.errors == {} and len(good.turns) == 2
    error = bad.errors["dialogue"]
    assert error.startswith("the RAG adapter's start()")
    if fault == "hangs":
        assert "did not return a session within 0.3 s" in error
    else:
        assert "ConnectionError: session service down, token=***" in error
        assert "abcdef123456" not in error


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
    with pytest.raises(ValueError, match="unknown metrics 'helpfulness'; choose from correctness"):
        run(model, Bot(), tmp_path, metrics=["helpfulness"])
    assert calls(model) == []


def test_free_text_role_reaches_the_generator(tmp_path: Path) -> None:
    model = scripted()
    run(model, Bot(), tmp_path, turns=1, role="a retired engineer who loves exact numbers")
    prompt = calls(model)[0][1][-1]["content"]
    assert "a retired engineer who loves exact numbers" in prompt


def test_run_dialogues_shares_one_limit(tmp_path: Path) -> None:
    docs = [ragdive.Document(id=f"d{i}", text=f"Fact {i}.") for i in range(4)]
    model = scripted(latency=0.05)
    dialogues = run_blocking(ragdive.arun_dialogues(
        docs, Bot(), judges=ragdive.Judges(model), concurrency=2, turns=1,
        metrics=["correctness"], cache_dir=tmp_path / "c"))
    assert [d.document_id for d in dialogues] == ["d0", "d1", "d2", "d3"]
    assert all(d.scores == {"correctness": 1.0} for d in dialogues)
    assert max_in_flight(model) == 2  # four dialogues at once, never more than the limit


def test_follow_up_checks_are_not_asked_on_turn_one(tmp_path: Path) -> None:
    # a confused validator model fails every follow-up check: none applies to turn 1, and
    # the first question leans on no conversation, which turn 1 need not do
    model = scripted({"YesNo": validator("standalone", "same_meaning", "type_fits")})
    dialogue = run(model, Bot(), tmp_path, turns=1, metrics=["correctness"])
    assert dialogue.errors == {} and dialogue.turns[0].rejections == []
    asked = [m[-1]["content"] for s, m in calls(model) if s == "YesNo"]
    assert sum(QUESTIONS["answer_supported"][0] in p for p in asked) == 1
    assert not any(QUESTIONS["standalone"][0] in p for p in asked)


def test_transient_provider_errors_are_retried(tmp_path: Path) -> None:
    failures = iter([True])

    def flaky(messages: list[dict]) -> float:
        if next(failures, False):
            raise ConnectionError("provider hiccup")
        return 0.9

    dialogue = run(scripted({"YesNo": flaky}), Bot(), tmp_path, turns=1,
                   metrics=["correctness"])
    assert dialogue.errors == {} and dialogue.scores == {"correctness": 1.0}


def test_missing_recording_in_replay_mode_names_model_and_prompt(tmp_path: Path) -> None:
    dialogue = run(scripted(name="replay"), Bot(), tmp_path, record_mode="none")
    error = dialogue.errors["dialogue"]
    assert "no recorded response for model 'fake/replay'" in error
    assert "You play a user" in error and "--ragdive-record-mode=new" in error


def test_forgetfulness_is_told_what_the_document_is_about(tmp_path: Path) -> None:
    # a stand-alone question may say "the ferry" where the kb has two: the judge reads the
    # heading of the turn's document, and a reply about the other ferry then does not
    # answer what the user meant
    ferry = ragdive.Document(id="ferry", text="# Brenmouth Harbour Ferry\n\n" + DOC.text)
    asked: list[str] = []

    def yes(messages: list[dict]) -> float:
        prompt = messages[-1]["content"]
        if "Question:" in prompt:
            asked.append(prompt)
            told = prompt.startswith("The user asks about: Brenmouth Harbour Ferry\n")
            return 0.2 if told and "Reply: It is 120 m." in prompt else 0.9
        return 0.9

    dialogue = ragdive.run_dialogue(
        ferry, Bot(), judges=ragdive.Judges(scripted({"YesNo": yes})),
        cache_dir=tmp_path / "cache", turns=2, metrics=["forgetfulness"])
    assert len(asked) == 2  # about the reply and about the answer key, both told
    assert dialogue.scores["forgetfulness"] == 1.0
    # a document without a heading: no subject line, the judge reads the question alone
    plain = run(scripted({"YesNo": yes}), Bot(), tmp_path / "plain", turns=2,
                metrics=["forgetfulness"])
    assert plain.scores["forgetfulness"] == 0.0 and asked[-1].startswith("Question:")


def test_a_documents_subject_is_its_first_heading() -> None:
    assert ragdive.Document(id="d", text="Intro.\n## Alder Tower (Oslo) \n# Other").subject == \
        "Alder Tower (Oslo)"
    assert DOC.subject is None
