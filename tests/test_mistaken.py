"""The role ``mistaken``: follow-ups built on a false premise, and premise_corrected."""

from __future__ import annotations

import json
import re

import pytest
from conftest import PROJECT_FIXTURES, role_dialogue, role_project

from pytest_ragdive.engine.base.models import Dialogue, DocumentGroup, GeneratedTurn
from pytest_ragdive.engine.roles.mistaken import ROLE, changed_figure, false_premise, refuted

FERRY = ("The Tern ferry crosses the bay in 40 minutes. A single ticket costs 6 euros. "
         "The ferry carries at most 120 passengers. It first sailed in 1987.")

CONFTEST = '''
import os
import re
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted
from pytest_ragdive.llm.scripted_replies import generic

FERRY = %r
SENTENCES = [s.strip() for s in re.split(r"(?<=[.])\\s+", FERRY)]

def next_question(messages):
    """The default follow-up, with the answer key the fact the plugin chose."""
    fact = re.search(r"^Fact: (.*)$", messages[-1]["content"], re.M).group(1)
    return {**generic("NextQuestion")(messages), "ground_truth": fact}

def yes(messages):
    """premise_corrected's judge: yes when the reply states every figure of the fact."""
    prompt = messages[-1]["content"]
    if not prompt.startswith("The user believes:"):
        return 0.9
    fact = re.search(r"^The fact: (.*)$", prompt, re.M).group(1)
    reply = re.search(r"^Reply: (.*)$", prompt, re.M).group(1)
    said = re.findall(r"\\d+", reply)
    return 0.9 if all(f in said for f in re.findall(r"\\d+", fact)) else 0.1

JUDGE = scripted({"YesNo": yes, "NextQuestion": next_question}, name="judge")

class Bot:
    def answer(self, question, history):
        if os.environ.get("BOT_MODE") == "corrects":  # the sentence it retrieves, as it is
            words = set(question.lower().split())
            best = max(SENTENCES, key=lambda s: len(words & set(s.lower().split())))
            return ragdive.RagAnswer(answer=f"Not quite: {best}", contexts=[best])
        return ragdive.RagAnswer(answer=f"Yes, right: {question}", contexts=[FERRY])

ragdive_document = ragdive.document_fixture([
    ragdive.Document(id="ferry", text=FERRY),
    ragdive.Document(id="village", text="Gamma is a quiet village by a slow river."),
])
''' % FERRY + PROJECT_FIXTURES



@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return role_project(pytester, CONFTEST, 4, "mistaken", ['correctness', 'premise_corrected'])


def test_follow_ups_state_a_premise_the_document_refutes(project, monkeypatch) -> None:
    d = role_dialogue(project, "ferry", "corrects", monkeypatch, "-k", "ferry")
    first, *follow_ups = [t.generated for t in d.turns]
    assert first.premise == "" and "premise_corrected" not in d.turns[0].judgements
    sentences = re.split(r"(?<=[.])\s+", FERRY)
    assert len(follow_ups) == 3 and len({t.evidence for t in follow_ups}) == 3
    for turn in follow_ups:
        # the evidence is a sentence of the document; the premise is that sentence with one
        # figure the document does not state in place of the one it does
        assert turn.evidence in sentences
        old, new = re.findall(r"\d+", turn.evidence), re.findall(r"\d+", turn.premise)
        assert len(old) == len(new) == 1 and new[0] not in re.findall(r"\d+", FERRY)
        assert turn.premise.replace(new[0], old[0]) == turn.evidence
        # the bot was sent the premise, then the question
        assert turn.rag_input.startswith(f"{turn.premise} ") and turn.rag_input.endswith("?")


def test_a_bot_that_corrects_scores_above_one_that_goes_along(project, monkeypatch) -> None:
    corrects = role_dialogue(project, "ferry", "corrects", monkeypatch, "-k", "ferry")
    goes_along = role_dialogue(project, "ferry", "goes along", monkeypatch, "-k", "ferry")
    assert corrects.scores["premise_corrected"] == 1.0
    assert goes_along.scores["premise_corrected"] == 0.0
    # the same conversation (same seed): only the bot differs; each premise turn was judged
    assert [t.generated for t in corrects.turns] == [t.generated for t in goes_along.turns]
    for turn in goes_along.turns[1:]:
        assert turn.judgements["premise_corrected"].reason.startswith(
            "the reply goes along with the user's false belief")


def test_a_dialogue_with_no_figure_to_change_leaves_the_metric_unscored(project) -> None:
    result = project.runpytest("-m", "ragdive", "--ragdive-update", "-k", "village")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*premise_corrected: no turn stated a false premise to "
                                 "correct (role 'mistaken'*"])


@pytest.mark.parametrize(("marker", "message"), [
    ('role="mistakn"', "*unknown role 'mistakn'; use one of precise, context-aware, forgetful, "
                       "skeptic, mistaken, vague, switching, or describe the persona in a "
                       "sentence*"),
    ('role="precise", metrics=["premise_corrected"]',
     "*premise_corrected scores only dialogues in role 'mistaken'*"),
])
def test_an_unknown_role_or_a_premise_metric_elsewhere_is_an_error(
    project, marker: str, message: str
) -> None:
    project.makepyfile(test_bot=f'''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, {marker})
def test_bot(ragdive_dialogue):
    pass
''')
    result = project.runpytest("-m", "ragdive", "--ragdive-update")
    assert result.ret != 0
    assert message.strip("*") in result.stdout.str() + result.stderr.str()


def test_a_turn_recorded_before_premises_loads() -> None:
    old = {"rag_input": "And its length?", "standalone_question": "How long is the bridge?",
           "ground_truth": "It is 300 m long.", "question_type": "follow_up",
           "evidence": "The bridge is 300 m long."}
    assert GeneratedTurn.model_validate(old).premise == ""
    dumped = {"document_id": "d", "role": "precise", "turns": [
        {"index": 1, "generated": old, "answer": {"answer": "300 m."}}]}
    assert Dialogue.model_validate_json(json.dumps(dumped)).turns[0].generated.premise == ""


@pytest.mark.parametrize("seed", range(20))
def test_a_false_premise_changes_one_figure_and_is_refuted(seed: int) -> None:
    fact = "Built in 1847, the 31-metre tower has 142 steps and opened on 12 October."
    premise = false_premise(fact, seed)
    assert premise is not None and refuted(premise, fact) and not refuted(fact, fact)
    changed = [(a, b) for a, b in zip(re.findall(r"\d+", fact), re.findall(r"\d+", premise))
               if a != b]
    assert len(changed) == 1 and changed_figure(premise, fact) == changed[0][::-1]
    if changed[0][0] == "12":  # a day of the month stays one
        assert 1 <= int(changed[0][1]) <= 28
    assert false_premise("No figure here at all.", seed) is None


def test_the_role_and_its_judge_count_only_in_the_digest_of_the_bands_that_use_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dataclasses import replace

    from pytest_ragdive.engine.base.settings import EVERY_ROLE
    from pytest_ragdive.engine.evaluation import binary as questions
    from pytest_ragdive.plugin.gate import prompts_digest

    def digests() -> tuple[str, str]:
        prompts_digest.cache_clear()
        return (prompts_digest("precise", EVERY_ROLE),
                prompts_digest("mistaken", (*EVERY_ROLE, "premise_corrected")))

    precise, mistaken = digests()
    assert precise != mistaken
    judge = questions.BINARY_JUDGES["premise_corrected"]
    monkeypatch.setitem(questions.BINARY_JUDGES, "premise_corrected",
                        replace(judge, threshold=judge.threshold / 2))
    assert digests()[0] == precise and digests()[1] != mistaken
    monkeypatch.setitem(questions.BINARY_JUDGES, "correctness",
                        replace(questions.BINARY_JUDGES["correctness"], threshold=0.1))
    assert digests()[0] != precise
    prompts_digest.cache_clear()


def test_the_judge_is_told_both_figures_and_asked_of_the_reply_and_of_the_key() -> None:
    from pytest_ragdive.engine.base.models import RagAnswer, Turn
    from pytest_ragdive.engine.evaluation.binary import judge_prompts

    evidence = "The ferry carries at most 120 passengers."
    premise = false_premise(evidence, 0)
    assert premise is not None
    wrong, right = changed_figure(premise, evidence)
    turn = Turn(index=2, answer=RagAnswer(answer="Yes, that many."), generated=GeneratedTurn(
        rag_input=f"{premise} Is it full in summer?", standalone_question="Is the ferry full?",
        ground_truth="It carries at most 120 passengers.", question_type="follow_up",
        evidence=evidence, premise=premise))
    reply, key = judge_prompts("premise_corrected", turn, [])
    told = (f"The user's figure {wrong} is wrong; the right figure is {right}. "
            f"Does the reply say {right}, or say that {wrong} is wrong?")
    assert right == "120" and wrong != right
    for prompt, answer in ((reply, "Yes, that many."), (key, turn.generated.ground_truth)):
        assert f"The user believes: {premise}\nThe fact: {evidence}\n" in prompt
        assert f"Reply: {answer}\n" in prompt and told in prompt


def test_a_premise_turns_question_may_lean_on_its_premise() -> None:
    from pytest_ragdive.engine.base.models import Document, RagAnswer, Turn
    from pytest_ragdive.engine.validation.validator import exact_verdict

    evidence = "The harbour bus runs every 20 minutes."
    group = DocumentGroup.of(Document(id="d", text=f"The Tern ferry crosses the bay. {evidence}"))
    history = [Turn(index=1, answer=RagAnswer(answer="It crosses the bay."),
                    generated=GeneratedTurn(
                        rag_input="What does the Tern ferry do?", ground_truth="It crosses.",
                        standalone_question="What does the Tern ferry do?",
                        question_type="initial", evidence="The Tern ferry crosses the bay."))]
    premise = "The harbour bus runs every 40 minutes."
    asked = GeneratedTurn(rag_input="How often does it run?", ground_truth="Every 20 minutes.",
                          standalone_question="How often does the harbour bus run?",
                          question_type="follow_up", evidence=evidence)
    # on its own, "it" has nothing in the conversation to stand for
    assert exact_verdict(asked, group, history, role=ROLE).categories == ["rag_input_not_connected"]
    stated = asked.model_copy(update={"rag_input": f"{premise} {asked.rag_input}",
                                      "premise": premise})
    assert exact_verdict(stated, group, history, role=ROLE).valid
    # a premise that is not the evidence with one figure changed is rejected
    wrong = stated.model_copy(update={"premise": "The harbour bus is blue.",
                                      "rag_input": "The harbour bus is blue. How often does it run?"})
    assert "ground_truth" in exact_verdict(wrong, group, history, role=ROLE).categories
