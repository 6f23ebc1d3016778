"""The role ``switching``: a user who turns to another document of a group and comes back to
the first one's topic without naming it."""

from __future__ import annotations

import json
import re

import pytest
from conftest import PROJECT_FIXTURES, PROJECT_INI, ROLE_TEST, role_dialogue, role_project

from pytest_ragdive.engine.base.models import (
    Dialogue,
    Document,
    DocumentGroup,
    GeneratedTurn,
    RagAnswer,
    Turn,
)
from pytest_ragdive.engine.roles.registry import role
from pytest_ragdive.engine.roles.switching import (
    LEAD_INS,
    ROLE,
    distinguishing,
    return_message,
    shift_checks,
)
from pytest_ragdive.engine.validation.validator import exact_verdict

BIKES = ("CityCycle has 900 bicycles in the city. CityCycle was launched in 2014 by the "
         "council. A CityCycle membership costs 60 euros a year. CityCycle has 50 stations near "
         "the river.")
FERRY = ("The Tern ferry crosses the bay in 40 minutes. The Tern carries 120 passengers on deck. "
         "The Tern first sailed in 1987 from Dalby. A ticket for the Tern costs 6 euros.")
QUESTIONS = dict(zip(re.split(r"(?<=[.]) ", f"{BIKES} {FERRY}"), [
    "How many bicycles does CityCycle have?", "When was CityCycle launched?",
    "How much does a CityCycle membership cost?", "How many stations does CityCycle have?",
    "How long does the Tern ferry take to cross the bay?",
    "How many passengers does the Tern carry?", "When did the Tern first sail?",
    "How much does a ticket for the Tern cost?"], strict=True))

CONFTEST = '''
import os
import re
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted

TEXTS = {"bikes": %r, "ferry": %r}
QUESTIONS = %r
SENTENCES = {k: [s.strip() for s in re.split(r"(?<=[.])\\s+", v)] for k, v in TEXTS.items()}
NAMES = {"bikes": "citycycle", "ferry": "tern"}

def topic(text):
    return next((k for k, name in NAMES.items() if name in text.lower()), None)

def first(messages):
    return {"question": "How many bicycles does CityCycle have?", "source": "bikes",
            "evidence": "CityCycle has 900 bicycles in the city.",
            "ground_truth": "CityCycle has 900 bicycles."}

def next_question(messages):
    """The model's stand-alone question about its fact, as its message too; about the bikes
    (a return turn), until told what is wrong, it names CityCycle twice."""
    prompt = messages[-1]["content"]
    fact = re.search(r"^Fact: (.*)$", prompt, re.M).group(1)
    question = QUESTIONS[fact]
    if topic(fact) == "bikes" and "A reviewer rejected" not in prompt:
        question = question.replace("?", " for CityCycle riders?")
    return {"ground_truth": fact, "standalone_question": question, "rag_input": question,
            "question_type": "follow_up"}

def yes(messages):
    """correctness: the reply states every figure of the reference answer; forgetfulness:
    the reply is about what the question names; the rest passes."""
    prompt = messages[-1]["content"]
    if prompt.startswith("Question:") and "Reply to check: " in prompt:  # the key or a part
        key = re.search(r"^Reference answer: (.*)$|units: (.*)\\? Answer", prompt, re.M)
        key = key.group(1) or key.group(2)
        reply = re.search(r"^Reply to check: (.*)$", prompt, re.M).group(1)
        return 0.9 if set(re.findall(r"\\d+", key)) <= set(re.findall(r"\\d+", reply)) else 0.1
    if prompt.startswith("Question:"):
        question = re.search(r"^Question: (.*)$", prompt, re.M).group(1)
        reply = re.search(r"^Reply: (.*)$", prompt, re.M).group(1)
        return 0.95 if topic(question) == topic(reply) else 0.05
    return 0.9

JUDGE = scripted({"YesNo": yes, "GroupFirstQuestion": first, "NextQuestion": next_question},
                 name="judge")

class Bot:
    """Answers with the sentence of the topic's document nearest the question. A question
    that names no topic is about the last one named; a bot that keeps its history (BOT_MODE
    "history") takes "the first thing I asked about" to be turn 1's topic."""

    def answer(self, question, history):
        asked = [m.content for m in history if m.role == "user"]
        about = topic(question)
        if about is None and os.environ.get("BOT_MODE") == "history" and "first" in question:
            about = topic(asked[0])
        if about is None:
            about = next(t for t in map(topic, reversed(asked)) if t)
        words = set(re.findall(r"\\w+", question.lower()))
        best = max(SENTENCES[about],
                   key=lambda s: len(words & set(re.findall(r"\\w+", s.lower()))))
        return ragdive.RagAnswer(answer=best, contexts=[best])

ragdive_document = ragdive.document_fixture(
    [ragdive.Document(id=k, text=v) for k, v in TEXTS.items()], group=2)
''' % (BIKES, FERRY, QUESTIONS) + PROJECT_FIXTURES



@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return role_project(pytester, CONFTEST, 5, "switching", ['correctness', 'forgetfulness'])


def returns(d: Dialogue) -> list[Turn]:
    return [t for t in d.turns if t.generated.topic_shift == "return"]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_follow_ups_switch_to_the_other_document_and_return_without_naming_the_first(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    d = role_dialogue(project, "bikes+ferry", "history", monkeypatch, "--ragdive-json=run.json",
                      "--ragdive-report=report.html", *xdist)
    generated = [t.generated for t in d.turns]
    assert [g.topic_shift for g in generated] == ["", "switch", "return", "switch", "return"]
    assert [g.source for g in generated] == ["bikes", "ferry", "bikes", "ferry", "bikes"]
    assert len({g.evidence for g in generated}) == 5  # a new fact each turn
    for turn in generated[1:]:
        assert turn.evidence in (FERRY if turn.source == "ferry" else BIKES)
        assert turn.ground_truth == turn.evidence and turn.question_type == "follow_up"
    for turn in (t for t in generated if t.topic_shift == "switch"):
        # a new question, on its own, naming what the user turns to
        assert turn.rag_input == turn.standalone_question and "Tern" in turn.rag_input
    for turn in returns(d):
        # back to turn 1's topic, referred to as such; the stand-alone question names it
        message = turn.generated.rag_input
        lead = next(lead for lead in LEAD_INS if message.startswith(lead))
        assert "citycycle" not in message.lower()
        assert "CityCycle" in turn.generated.standalone_question
        assert re.fullmatch(r" [a-z][\w ]* (it|its \w+)( \w+)*\?", message[len(lead):])
        # the model named CityCycle twice at first: sent back, saying what gave it away
        (rejected,) = turn.rejections
        assert rejected.validation.categories == ["rag_input_not_connected"]
        assert rejected.validation.feedback.startswith(
            'rag_input names "citycycle", which says what the user goes back to')
        # a bot that keeps its history answers from the first topic's document
        assert turn.answer.answer == turn.generated.evidence
        assert turn.judgements["correctness"].score == 1.0
        assert turn.judgements["forgetfulness"].score == 0.0
    # the report and the JSON show which turns switch and which return
    run = json.loads((project.path / "run.json").read_text())
    assert '"topic_shift": "return"' in json.dumps(run)
    html = (project.path / "report.html").read_text()
    assert html.count("returns to turn 1's topic") == 2 and html.count("switches topic") == 2


def test_a_bot_that_answers_from_the_last_topic_scores_worse_on_the_return_turns(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    history, last = (role_dialogue(project, "bikes+ferry", mode, monkeypatch)
                     for mode in ("history", "last topic"))
    assert len(returns(last)) == 2
    for turn in returns(last):  # it answered about the ferry
        assert turn.answer.answer in FERRY and turn.generated.source == "bikes"
        assert turn.judgements["correctness"].score == 0.0
        assert turn.judgements["forgetfulness"].score == 1.0
    for good, bad in zip(history.turns, last.turns):
        if good.generated.topic_shift != "return":  # the same elsewhere
            assert {m: j.score for m, j in good.judgements.items()} == {
                m: j.score for m, j in bad.judgements.items()}
    assert last.scores["correctness"] < history.scores["correctness"]
    assert last.scores["forgetfulness"] > history.scores["forgetfulness"]


@pytest.mark.parametrize(("fixture", "ini", "item"), [
    ("", "", "bikes"),
    ("", "ragdive_role = switching", "bikes"),
    ('"one.txt"', "", "ferry"),  # a groups file's line of one id is one document
])
def test_the_role_on_one_document_is_an_error_naming_the_fix(
    project: pytest.Pytester, fixture: str, ini: str, item: str
) -> None:
    (project.path / "one.txt").write_text("bikes ferry\nferry\n")
    project.makeconftest(CONFTEST.replace("group=2)", f"group={fixture})" if fixture else ")"))
    if ini:
        project.makepyfile(test_bot=ROLE_TEST.format(
            turns=5, role="switching", metrics=["correctness"]).replace(', role="switching"', ""))
    project.makeini(PROJECT_INI + ini)
    result = project.runpytest("-m", "ragdive", "--ragdive-update")
    assert result.ret != 0
    assert (f"test_bot.py::test_bot[{item}]: role 'switching' switches between the documents of "
            f"a group and comes back, and {item!r} is one document; make each item a group of "
            "documents: ragdive.document_fixture('kb/*.md', group=2), group=2 in the marker, or "
            "ragdive_document_group = 2 in the ini file") in " ".join(
                (result.stdout.str() + result.stderr.str()).split())


def test_run_dialogue_on_one_document_in_the_role_is_an_error() -> None:
    from pytest_ragdive import Judges, run_dialogue
    from pytest_ragdive.engine.base.settings import SettingError
    from pytest_ragdive.llm.scripted import calls, scripted

    model = scripted()
    with pytest.raises(SettingError, match="arun_dialogue: role 'switching' switches between "
                       "the documents of a group and comes back, and 'bikes' is one document; "
                       "pass run_dialogue a DocumentGroup"):
        run_dialogue(Document(id="bikes", text=BIKES), object(), judges=Judges(model),
                     role="switching")
    assert calls(model) == []
    ROLE.check_group(PAIR, "here", "fix")  # a group is fine, and so is any other role
    role("precise").check_group(DocumentGroup(documents=[PAIR.documents[0]]), "here", "fix")


PAIR = DocumentGroup(documents=[Document(id="bikes", text=BIKES),
                                Document(id="ferry", text=FERRY)])
OPENED = Turn(index=1, answer=RagAnswer(answer="It has 900 bicycles."), generated=GeneratedTurn(
    rag_input="How many bicycles does CityCycle have?", ground_truth="It has 900.",
    standalone_question="How many bicycles does CityCycle have?", question_type="initial",
    evidence="CityCycle has 900 bicycles in the city.", source="bikes"))
SWITCHED = Turn(index=2, answer=RagAnswer(answer="In 40 minutes."), generated=GeneratedTurn(
    rag_input="How long does the Tern ferry take to cross the bay?", ground_truth="40 minutes.",
    standalone_question="How long does the Tern ferry take to cross the bay?",
    question_type="follow_up", evidence="The Tern ferry crosses the bay in 40 minutes.",
    source="ferry", topic_shift="switch"))


def test_what_says_a_topic_is_its_names_headings_and_what_most_sentences_say() -> None:
    assert distinguishing(PAIR.documents[0], PAIR) == {"citycycle"}
    assert distinguishing(PAIR.documents[1], PAIR) == {"tern", "dalby"}
    # what both documents' topics share says neither; months are no names
    harbour = Document(id="harbour-ferry", text="# Harbour Ferry\n\nThe ferry left Brenmouth in "
                       "May. The ferry is blue. Boats cost 3 marks.")
    river = Document(id="river-ferry", text="# River Ferry\n\nThe ferry sails from Brenmouth. "
                     "The ferry is green. Boats cost 9 marks.")
    ferries = DocumentGroup(documents=[harbour, river])
    assert distinguishing(harbour, ferries) == {"harbour"}
    assert distinguishing(river, ferries) == {"river"}


@pytest.mark.parametrize(("standalone", "question"), [
    ("When was CityCycle launched?", "when was it launched?"),
    ("How many stations does CityCycle have?", "how many stations does it have?"),
    ("How much does an annual CityCycle membership cost?",
     "how much does its annual membership cost?"),  # something of the topic: "its"
    ("Is CityCycle's app free?", "is its app free?"),
    # what "how many" counts is no "it" (the check sends this one back)
    ("How many CityCycle stations are there?", "how many CityCycle stations are there?"),
    ("How many bicycles are there?", "how many bicycles are there?"),  # nothing names it
])
def test_a_return_message_refers_to_the_first_topic_as_it(standalone: str, question: str
                                                          ) -> None:
    messages = {return_message(standalone, PAIR, [OPENED, SWITCHED], seed) for seed in range(20)}
    assert messages == {f"{lead} {question}" for lead in LEAD_INS}


def return_turn(message: str, source: str = "bikes") -> GeneratedTurn:
    return GeneratedTurn(rag_input=message, standalone_question="When was CityCycle launched?",
                         ground_truth="In 2014.", question_type="follow_up",
                         evidence="CityCycle was launched in 2014 by the council.",
                         source=source,
                         topic_shift="return")


@pytest.mark.parametrize(("turn", "check", "reason"), [
    (return_turn("Going back to the first thing I asked about: when was it launched?"), "", ""),
    (return_turn("Going back to the first thing I asked about: when was CityCycle launched?"),
     "returns_unnamed", 'rag_input names "citycycle", which says what the user goes back to'),
    (return_turn("Going back to the first thing I asked about: it launched."),
     "returns_unnamed", "is not a question"),
    (return_turn("Going back to the first thing I asked about: when did it first sail?",
                 source="ferry"),
     "shift_source", "a return turn asks about \"bikes\", turn 1's source text, and its source "
     "is 'ferry'"),
    (SWITCHED.generated, "", ""),
    (SWITCHED.generated.model_copy(update={"rag_input": "How long does it take?"}),
     "names_topic", "does not say what the user turns to; in standalone_question, name what "
     'the fact of "ferry" is about (dalby, tern)'),
    (SWITCHED.generated.model_copy(update={"source": "bikes", "evidence": BIKES[:39]}),
     "shift_source", 'a switch turn asks about another source text than "bikes"'),
])
def test_the_exact_checks_of_switch_and_return_turns(turn: GeneratedTurn, check: str,
                                                      reason: str) -> None:
    history = [OPENED, SWITCHED] if turn.topic_shift == "return" else [OPENED]
    found = {c: r for c, r in shift_checks(turn, PAIR, history).items() if r}
    assert list(found) == ([check] if check else [])
    assert reason in found.get(check, "")
    verdict = exact_verdict(turn, PAIR, history, role=ROLE)
    # neither has to lean on the conversation: a switch names its topic, a return refers
    # back by its lead-in
    assert verdict.valid is (not check)
    assert "from earlier turns" not in verdict.feedback  # the lean-back check's own reasons
    assert "the follow-up can be understood without the conversation" not in verdict.feedback


def test_a_turn_recorded_before_topic_shifts_loads() -> None:
    old = {"rag_input": "And its length?", "standalone_question": "How long is the bridge?",
           "ground_truth": "It is 300 m long.", "question_type": "follow_up"}
    assert GeneratedTurn.model_validate(old).topic_shift == ""


def test_the_breakdown_shows_switch_and_return_turns_as_types_of_their_own() -> None:
    from pytest_ragdive.engine.base.models import Judgement
    from pytest_ragdive.plugin.breakdown import cells

    judged = {"correctness": Judgement(score=1.0)}
    turns = [t.model_copy(update={"judgements": judged}) for t in (OPENED, SWITCHED)]
    found = cells([Dialogue(document_id=PAIR.id, role="switching", turns=turns)])
    assert found["type"]["correctness"] == {"initial": [1.0, 1], "switch": [1.0, 1]}


def test_the_role_counts_only_in_the_digest_of_its_own_bands() -> None:
    from pytest_ragdive.engine.base.settings import EVERY_ROLE
    from pytest_ragdive.plugin.gate import prompts_digest

    assert prompts_digest("switching", EVERY_ROLE, True) != prompts_digest(
        "precise", EVERY_ROLE, True)
    # no metric of its own: its default metrics are the six of every role
    from pytest_ragdive.engine.base.settings import scored_metrics

    assert scored_metrics(None, 5, "here", role="switching") == EVERY_ROLE
