"""The role ``vague``: follow-ups that do not say which of several facts they mean, and
clarified."""

from __future__ import annotations

import re

import pytest
from conftest import PROJECT_FIXTURES, role_dialogue, role_project

from pytest_ragdive.engine.base.models import (
    Dialogue,
    Document,
    DocumentGroup,
    GeneratedTurn,
    RagAnswer,
    Turn,
)
from pytest_ragdive.engine.generation.facts import facts
from pytest_ragdive.engine.roles.vague import (
    ROLE,
    answer_key,
    answers,
    answers_each,
    parallel,
    readings_check,
    telling,
    vague_message,
)

TOWN = ("Brenmouth runs household bins and city tickets. The grey bin takes residual waste "
        "and is emptied every two weeks. The blue bin takes paper and is emptied every four "
        "weeks. A single ticket costs 2.40 marks. A day ticket costs 6.80 marks.")
GREY, BLUE, SINGLE, DAY = facts(Document(id="town", text=TOWN))[1:]

CONFTEST = '''
import os
import re
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted
from pytest_ragdive.llm.scripted_replies import generic

TOWN = %r

def next_question(messages):
    """A user who asks about the fact it is given as about any, naming it twice at first."""
    prompt = messages[-1]["content"]
    fact = re.search(r"^Fact: (.*)$", prompt, re.M).group(1)
    if "bin" not in fact and "ticket" not in fact:
        return generic("NextQuestion")(messages)
    told = "A reviewer rejected" in prompt
    subject = re.match(r"(?:The|A) (\\w+ \\w+)", fact).group(1).lower()
    if "bin" in fact:
        standalone = f"How often is the {subject} emptied?" if told \\
            else f"How often is the {subject} for residual waste emptied?"
    else:
        standalone = f"How much does a {subject} cost?"
    return {"ground_truth": "The model's own key.", "standalone_question": standalone,
            "rag_input": standalone, "question_type": "follow_up"}

def yes(messages):
    """clarified's judge: the reply asks which one, or (the negation) it does not."""
    prompt = messages[-1]["content"]
    if not prompt.startswith("The user asked:"):
        return 0.9
    asks = "which one" in re.search(r"^Reply: (.*)$", prompt, re.M).group(1).lower()
    return 0.9 if asks != ("for one case only" in prompt) else 0.1

JUDGE = scripted({"YesNo": yes, "NextQuestion": next_question}, name="judge")

class Bot:
    def answer(self, question, history):
        if not history:
            return ragdive.RagAnswer(answer="Brenmouth runs household bins and city tickets.",
                                     contexts=[TOWN])
        if os.environ.get("BOT_MODE") == "asks":
            return ragdive.RagAnswer(answer="Which one do you mean?", contexts=[TOWN])
        if os.environ.get("BOT_MODE") == "covers":
            each = ("The grey bin every two weeks, the blue one every four weeks."
                    if "emptied" in question else "A single one 2.40 marks, a day one 6.80.")
            return ragdive.RagAnswer(answer=each, contexts=[TOWN])
        picked = "Every two weeks." if "emptied" in question else "It costs 2.40 marks."
        return ragdive.RagAnswer(answer=picked, contexts=[TOWN])

ragdive_document = ragdive.document_fixture([
    ragdive.Document(id="town", text=TOWN),
    ragdive.Document(id="village", text="Gamma is a quiet village by a slow river."),
])
''' % TOWN + PROJECT_FIXTURES



@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return role_project(pytester, CONFTEST, 3, "vague", ['correctness', 'clarified'])


def test_follow_ups_ask_what_parallel_facts_answer_without_saying_which(
    project, monkeypatch
) -> None:
    d = role_dialogue(project, "town", "asks", monkeypatch, "-k", "town")
    first, *follow_ups = d.turns
    assert first.generated.readings == [] and "clarified" not in first.judgements
    # one follow-up about the bins, one about the tickets, each fact asked about first
    assert sorted(sorted(t.generated.readings) for t in follow_ups) == sorted(
        [sorted([GREY, BLUE]), sorted([SINGLE, DAY])])
    for turn in follow_ups:
        generated = turn.generated
        # the model's stand-alone question names the one fact it was given; the message
        # puts what tells it from the other as "it"
        assert generated.readings[0].lower().split()[1] in generated.standalone_question
        assert generated.rag_input in ("How often is it emptied?", "How much does it cost?")
        # the answer key is the readings, as the document states them, not the model's key
        assert generated.ground_truth == generated.evidence == " ".join(generated.readings)
        assert generated.question_type == "follow_up" and turn.validated
    # a stand-alone question that names it twice leaves a message that still says which
    # one: sent back, saying what gave it away
    bins = next(t for t in follow_ups if "bin" in t.generated.standalone_question)
    (rejected,) = bins.rejections
    assert rejected.turn.rag_input == "How often is it for residual waste emptied?"
    assert rejected.validation.categories == ["question_not_consistent"]
    assert re.match(r'rag_input says "(residual|waste)", which tells which of 2 similar facts '
                    r"the user means", rejected.validation.feedback)
    assert not next(t for t in follow_ups if t is not bins).rejections


def test_a_bot_that_asks_or_answers_each_scores_above_one_that_picks_one(
    project, monkeypatch
) -> None:
    asks, covers, picks = (role_dialogue(project, "town", mode, monkeypatch, "-k", "town")
                           for mode in ("asks", "covers", "picks"))
    assert asks.scores["clarified"] == covers.scores["clarified"] == 1.0
    assert picks.scores["clarified"] == 0.0
    # the same conversation (same seed): only the bot differs; each vague turn was judged
    assert [t.generated for t in asks.turns] == [t.generated for t in picks.turns]
    for turn in picks.turns[1:]:
        assert turn.judgements["clarified"].reason.startswith(
            "the reply answers one reading as if there were no other")
    # a reply with every reading's answer is decided by code, the judge not asked
    for turn in covers.turns[1:]:
        assert turn.judgements["clarified"].reason == (
            "the reply gives the answer of every reading (exact)")


def test_a_document_without_parallel_facts_leaves_clarified_unscored(project) -> None:
    result = project.runpytest("-m", "ragdive", "--ragdive-update", "-k", "village")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*clarified: no turn asked a question with several readings "
                                 "(role 'vague'*"])


def test_clarified_in_another_role_is_an_error(project) -> None:
    project.makepyfile(test_bot='''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, role="mistaken", metrics=["clarified"])
def test_bot(ragdive_dialogue):
    pass
''')
    result = project.runpytest("-m", "ragdive", "--ragdive-update")
    assert result.ret != 0
    assert "clarified scores only dialogues in role 'vague'" in result.stderr.str()


def test_parallel_facts_answer_one_question_with_different_figures() -> None:
    assert parallel(GREY, BLUE) and parallel(SINGLE, DAY) and not parallel(GREY, SINGLE)
    # the same figure is no other answer; a run without a word of content relates nothing
    assert not parallel(GREY, GREY.replace("grey", "yellow"))
    assert not parallel("The Gannet was built in 2004, and it runs on diesel.",
                        "The service stopped on 11 days in 2023, and a bus ran.")
    assert answers([BLUE, GREY]) == ["four", "two"]
    assert answers([SINGLE, DAY]) == ["2.40", "6.80"]
    assert telling([GREY, BLUE]) == ["grey", "residual", "waste", "two", "blue", "paper",
                                     "four"]


@pytest.mark.parametrize(("message", "wrong"), [
    ("How often is it emptied?", None),
    ("How often are the bins emptied?", None),  # a plural names them all
    ("How often is the bin for paper emptied?", "paper"),
    ("Is it emptied every four weeks?", "four"),
    ("How often it is emptied.", "not a question"),
    ("What is it?", "asks nothing in particular"),
])
def test_a_vague_message_may_name_what_its_readings_share_and_nothing_that_tells_them_apart(
    message: str, wrong: str | None
) -> None:
    document = Document(id="town", text=TOWN)
    turn = GeneratedTurn(rag_input=message, standalone_question="How often is the grey bin "
                         "emptied?", ground_truth=f"{GREY} {BLUE}", question_type="follow_up",
                         evidence=f"{GREY} {BLUE}", readings=[GREY, BLUE])
    found = readings_check(turn, document)
    assert (found is None) if wrong is None else wrong in (found or "")
    made_up = turn.model_copy(update={"readings": [GREY, "The green bin is emptied daily."]})
    assert readings_check(made_up, document) == (
        "the readings are not two or more facts of the source text")


@pytest.mark.parametrize(("standalone", "message"), [
    ("How often is the grey bin emptied?", "How often is it emptied?"),
    ("When is the grey bin emptied in Brenmouth?", "When is it emptied in Brenmouth?"),
    ("How often is a bin emptied?", None),  # nothing in it says which one
])
def test_the_message_puts_what_says_which_reading_as_it(standalone: str, message: str | None
                                                         ) -> None:
    assert vague_message(standalone, [GREY, BLUE]) == message


@pytest.mark.parametrize(("reply", "each"), [
    ("The grey bin every two weeks, the blue one every four.", True),
    ("Every 2 weeks for grey, every 4 weeks for blue.", True),  # digits for number words
    ("Every two weeks.", False),
    ("Which bin do you mean?", False),  # asked, not answered: for the judge to say
])
def test_a_reply_that_gives_every_readings_answer_is_clarified_by_code(reply: str, each: bool
                                                                       ) -> None:
    assert answers_each(reply, [GREY, BLUE]) is each


def test_the_judge_sees_the_readings_and_is_asked_and_asked_the_negation() -> None:
    from pytest_ragdive.engine.evaluation.binary import judge_prompts

    turn = Turn(index=2, answer=RagAnswer(answer="Every two weeks."), generated=GeneratedTurn(
        rag_input="How often is it emptied?", standalone_question="How often is a bin emptied?",
        ground_truth=f"{BLUE} {GREY}", question_type="follow_up", evidence=f"{BLUE} {GREY}",
        readings=[BLUE, GREY]))
    asked, negated = judge_prompts("clarified", turn, [])
    for prompt, question in ((asked, "Does the reply ask the user which one they mean?"), (
            negated, "Does the reply answer for one case only, as if there were no other?")):
        assert prompt == (
            "The user asked: How often is it emptied?\n"
            "The source text answers it differently for different cases:\n"
            f"- {BLUE}\n- {GREY}\n"
            "Reply: Every two weeks.\n\n"
            f"The user did not say which case they mean. {question} Answer yes or no.")


def test_the_role_and_its_judge_count_only_in_the_digest_of_the_bands_that_use_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dataclasses import replace

    from pytest_ragdive.engine.base.settings import EVERY_ROLE
    from pytest_ragdive.engine.evaluation import binary as questions
    from pytest_ragdive.plugin.gate import prompts_digest

    def digests() -> tuple[str, ...]:
        prompts_digest.cache_clear()
        return (prompts_digest("precise", EVERY_ROLE),
                prompts_digest("mistaken", (*EVERY_ROLE, "premise_corrected")),
                prompts_digest("vague", (*EVERY_ROLE, "clarified")))

    before = digests()
    assert len(set(before)) == 3
    judge = questions.BINARY_JUDGES["clarified"]
    monkeypatch.setitem(questions.BINARY_JUDGES, "clarified", replace(judge, threshold=0.1))
    after = digests()
    assert after[:2] == before[:2] and after[2] != before[2]
    prompts_digest.cache_clear()


def test_a_turn_recorded_before_readings_loads() -> None:
    old = {"rag_input": "And its length?", "standalone_question": "How long is the bridge?",
           "ground_truth": "It is 300 m long.", "question_type": "follow_up"}
    assert GeneratedTurn.model_validate(old).readings == []


def test_the_labelled_cases_are_vague_turns_as_the_role_writes_them() -> None:
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    cases = [json.loads(line) for line in
             (root / "pytest_ragdive/judge_cases/clarified.jsonl").read_text().splitlines()]
    for case in cases:
        document = Document(id=case["document"], text=(
            root / "example_project/kb" / f"{case['document']}.md").read_text())
        fact, *others = case["readings"]
        assert others == [f for f in facts(document) if f != fact and parallel(fact, f)]
        turn = GeneratedTurn(**{k: case[k] for k in (
            "rag_input", "standalone_question", "ground_truth", "readings")},
            question_type="follow_up", evidence=case["ground_truth"])
        assert turn.ground_truth == answer_key(turn.readings)
        assert readings_check(turn, document) is None, case["id"]
    # balanced per document; two documents to choose on, two held out
    for split, documents in (("development", {"recycling-rules", "tram-network"}),
                             ("held-out", {"bike-share", "library-system"})):
        for document in documents:
            labels = [c["label"] for c in cases if c["document"] == document]
            assert labels and 2 * sum(labels) == len(labels)
            assert {c["split"] for c in cases if c["document"] == document} == {split}


def test_the_generator_asks_about_one_reading_as_about_any_fact(tmp_path) -> None:
    from pytest_ragdive.engine.conversation.dialogue import run_blocking
    from pytest_ragdive.engine.generation.generator import Writer, generate_turn
    from pytest_ragdive.llm.cache import ResponseCache
    from pytest_ragdive.llm.client import LLMClient
    from pytest_ragdive.llm.model import Model
    from pytest_ragdive.llm.scripted import calls, scripted

    def asks(messages: list[dict[str, str]]) -> dict[str, str]:
        fact = re.search(r"^Fact: (.*)$", messages[-1]["content"], re.M).group(1)
        subject = " ".join(fact.split()[:3]).lower()
        return {"ground_truth": "Its own key.", "standalone_question": f"What about {subject}?",
                "rag_input": "And that?", "question_type": "follow_up"}

    model = scripted({"NextQuestion": asks})
    opened = Turn(index=1, answer=RagAnswer(answer="Bins and tickets."), generated=GeneratedTurn(
        rag_input="What does Brenmouth run?", standalone_question="What does Brenmouth run?",
        ground_truth="Bins and tickets.", question_type="initial",
        evidence="Brenmouth runs household bins and city tickets."))
    turn = run_blocking(generate_turn(
        Writer(LLMClient(ResponseCache(tmp_path)), Model(model), 0.7),
        group=DocumentGroup.of(Document(id="t", text=TOWN)), role=ROLE, history=[opened],
        seed=0))
    ((_, messages),) = calls(model)
    # the prompt of any follow-up, about the first reading
    assert f"\nFact: {turn.readings[0]}\n" in messages[-1]["content"]
    assert sorted(turn.readings) in (sorted([GREY, BLUE]), sorted([SINGLE, DAY]))
    assert turn.rag_input == "What about it?"
    assert turn.ground_truth == turn.evidence == answer_key(turn.readings)


def test_in_a_group_a_vague_follow_up_takes_its_readings_from_the_one_document_it_names(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the role vague on a group item: the readings are facts of the turn's own document, and
    # no turn is cross-document (the readings must be of one document)
    role_project(pytester, CONFTEST.replace(
        'text="Gamma is a quiet village by a slow river."),\n])',
        'text="Gamma is a quiet village by a slow river."),\n], group=2)'),
        5, "vague", ["correctness", "clarified"])
    monkeypatch.setenv("BOT_MODE", "asks")
    result = pytester.runpytest("-m", "ragdive", "--ragdive-update", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_bot*town+village*PASSED*"])
    d = Dialogue.model_validate_json((pytester.path / "town+village-asks.json").read_text())
    follow_ups = d.turns[1:]
    assert {t.generated.source for t in d.turns} == {"town", "village"}
    assert not any(t.generated.question_type == "cross_document" for t in d.turns)
    vague = [t for t in follow_ups if t.generated.readings]
    assert vague and d.scores["clarified"] == 1.0
    for turn in vague:
        assert turn.generated.source == "town" and turn.validated
        assert set(turn.generated.readings) in ({GREY, BLUE}, {SINGLE, DAY})
        assert turn.generated.rag_input in ("How often is it emptied?", "How much does it cost?")
        assert turn.generated.evidence == answer_key(turn.generated.readings)
