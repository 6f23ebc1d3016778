"""A follow-up's message: the model's when it leans on the conversation, else its stand-alone
question made to refer back, and the exact check that decides it."""

from __future__ import annotations

import pytest

from pytest_ragdive.engine.base.models import (
    Document,
    DocumentGroup,
    GeneratedTurn,
    RagAnswer,
    Turn,
)
from pytest_ragdive.engine.documents.loading import known_together
from pytest_ragdive.engine.generation.follow_ups import (
    chat_message,
    depends_on_conversation,
    follow_up,
    refer_back,
    unnamed,
)
from pytest_ragdive.engine.roles import mistaken
from pytest_ragdive.engine.roles.registry import role
from pytest_ragdive.engine.validation.conversation import leans_back, names_its_topic, told_apart

FIRST = ["What is Brenmouth's public bike-share scheme called?",
         "It is called CityCycle. It has 1,150 bicycles and the Tern ferry takes them."]


@pytest.mark.parametrize(("standalone", "message"), [
    ("When was CityCycle launched?", "When was it launched?"),
    ("How many passengers can the Tern ferry carry?", "How many passengers can it carry?"),
    ("When did CityCycle open?", "When did it open?"),  # the question's last verb stays
    ("How much do the bicycles cost?", "How much do they cost?"),
    ("What do riders pay for the bicycles?", "What do riders pay for them?"),
])
def test_the_phrase_the_conversation_said_becomes_a_pronoun(standalone: str, message: str) -> None:
    assert refer_back(standalone, FIRST, FIRST) == message
    assert depends_on_conversation(message, standalone, FIRST)


TRAM = ["Which tram line circles the old town?",
        "Line 2 (green) circles the old town; Line 3 (blue) links Central Station with the "
        "Harbour Terminal. The city owns the tram timetable."]


@pytest.mark.parametrize(("standalone", "message"), [
    # a name's number and label are one phrase with it
    ("What does Line 2 (green) do at night?", "What does it do at night?"),
    # and so is a number after a name written in lower case (was "What is it 3?")
    ("What is line 3?", "What is it?"),
    ("When does line 3 run at night?", "When does it run at night?"),
    # a verb before its object is not a phrase
    ("Who owns the tram timetable?", "Who owns it?"),
    # a word before "do" is not a question's last verb
    ("What does the tram timetable do?", "What does it do?"),
    # the word after a relative pronoun is its verb
    ("Is there a tram that links Central Station with the ferry?",
     "Is there a tram that links it with the ferry?"),
])
def test_a_phrase_is_replaced_whole_and_verbs_stay(standalone: str, message: str) -> None:
    assert refer_back(standalone, TRAM, TRAM) == message

PRECISE = role("precise")


def test_a_question_about_nothing_said_or_only_generic_words_cannot_refer_back() -> None:
    assert refer_back("Who designed the harbour bridge?", FIRST, FIRST) is None
    # "the name" was said, but it is not what the conversation is about
    assert refer_back("What is the name?", ["What is the name of the scheme?"], []) is None


def test_the_last_turn_goes_first() -> None:
    said = ["Tell me about the Tern ferry.", "It crosses the estuary.",
            "And CityCycle?", "CityCycle lends bicycles."]
    asked = "Are CityCycle bicycles allowed on the Tern ferry?"
    assert refer_back(asked, said, said[2:]) == "Are they allowed on the Tern ferry?"
    assert refer_back(asked, said, said[:2]) == "Are CityCycle bicycles allowed on it?"


def test_the_models_message_is_kept_when_it_leans_on_the_conversation() -> None:
    standalone = "When was CityCycle launched?"
    assert chat_message("And when did it start?", standalone, FIRST, FIRST) == (
        "And when did it start?")
    # the stand-alone question again, or a bare noun phrase: made from the stand-alone question
    assert chat_message(standalone, standalone, FIRST, FIRST) == "When was it launched?"
    assert chat_message("CityCycle launch", standalone, FIRST, FIRST) == "When was it launched?"
    # nothing to refer to: the model's message, for the validator to judge
    assert chat_message("Bridge?", "Who designed the harbour bridge?", FIRST, FIRST) == "Bridge?"


@pytest.mark.parametrize(("standalone", "message"), [
    ("When did the first motor bus route of Brenmouth Regional Buses open?",
     "When did its first motor bus route open?"),
    ("Who repairs the bicycles of CityCycle?", "Who repairs its bicycles?"),
])
def test_what_belongs_to_the_phrase_the_conversation_said_becomes_its(standalone: str,
                                                                     message: str) -> None:
    said = [*FIRST, *BUSES]
    assert refer_back(standalone, said, said) == message


def test_a_phrase_after_a_quantifier_stays() -> None:
    said = ["What is the tram network?", "Every tram has two wheelchair spaces."]
    assert refer_back("What does every tram carry?", said, said) is None


BUSES = ["Who runs Brenmouth Regional Buses?", "Brenmouth Regional Buses are run by Valleybus."]


def test_a_question_naming_only_its_own_fact_is_asked_about_the_conversations_subject() -> None:
    message, standalone = follow_up("When did the first motor bus route open?",
                                    "When did the first motor bus route open?", BUSES, BUSES,
                                    "Brenmouth Regional Buses")
    assert message == "When did the first motor bus route open?"
    assert standalone == "About Brenmouth Regional Buses: When did the first motor bus route open?"
    assert depends_on_conversation(message, standalone, BUSES)
    # a conversation that never named the subject gives the question nothing to lean on
    other = ["What is CityCycle?", "A bike-share scheme."]
    message, standalone = follow_up("When did the first motor bus route open?",
                                    "When did the first motor bus route open?", other, other,
                                    "Brenmouth Regional Buses")
    assert not depends_on_conversation(message, standalone, other)


def test_a_question_that_already_leans_back_keeps_its_stand_alone_form() -> None:
    assert follow_up("When was Valleybus founded?", "When was Valleybus founded?", BUSES, BUSES,
                     "Brenmouth Regional Buses") == ("When was it founded?",
                                                     "When was Valleybus founded?")
    assert follow_up("Who owns X?", "Who owns X?", BUSES, BUSES, None) == (
        "Who owns X?", "Who owns X?")


def turn(rag_input: str, standalone: str) -> GeneratedTurn:
    return GeneratedTurn(rag_input=rag_input, standalone_question=standalone,
                         ground_truth="x", evidence="x", question_type="follow_up")


def test_the_exact_check_names_what_to_fix() -> None:
    history = [Turn(index=1, generated=GeneratedTurn(
        rag_input=FIRST[0], standalone_question=FIRST[0], ground_truth="CityCycle.",
        evidence="x", question_type="initial"), answer=RagAnswer(answer=FIRST[1]))]
    assert leans_back(turn("When was it launched?", "When was CityCycle launched?"),
                      history) is None
    assert "not a question" in (leans_back(turn("CityCycle", "When was CityCycle launched?"),
                                           history) or "")
    assert 'repeats "citycycle"' in (leans_back(
        turn("When was CityCycle launched?", "When was CityCycle launched?"), history) or "")
    assert "without the conversation" in (leans_back(
        turn("Who designed the harbour bridge?", "Who designed the harbour bridge?"),
        history) or "")


def test_a_phrase_asked_about_with_what_or_which_stays() -> None:
    said = ["When did the first electric line open?", "The first electric line opened in 1911."]
    # "What it circles the old town?" asks nothing: the line is what the user asks for
    assert refer_back("What line circles the old town?", said, said) is None
    assert refer_back("Which line runs at night?", said, said) is None


def _ferries() -> dict[str, Document]:
    return {d.id: d for d in known_together([
        Document(id="river", text="# River Ferry\n\nBoats leave the Old Quay every 60 minutes. It is "
                                  "owned by the Ardle Trust. In 2023 it carried 410,000 passengers."),
        Document(id="harbour", text="# Harbour Ferry\n\nFerries leave the terminal every 30 "
                                    "minutes. It is owned by the city. In 2023 it carried 1.9 "
                                    "million passengers."),
        Document(id="buses", text="# Regional Buses\n\nBuses leave the bus station every 20 "
                                  "minutes. They are owned by Valleybus. In 2023 they carried "
                                  "11.4 million passengers.")])}


def test_a_follow_up_naming_what_only_its_document_has_is_told_apart() -> None:
    river = _ferries()["river"]
    # what look-alike services all state needs the conversation to say which one is meant
    assert told_apart("Who owns it?", river) is None
    assert told_apart("In 2023, how many passengers did it carry?", river) is None
    reason = told_apart("When do boats leave the Old Quay?", river)
    assert reason is not None and '"boats", "old", "quay"' in reason
    # a document loaded alone has nothing to be told apart from
    alone = Document(id="river", text=river.text)
    assert told_apart("When do boats leave the Old Quay?", alone) is None


def test_the_validator_sends_back_a_follow_up_its_words_alone_answer() -> None:
    from pytest_ragdive.engine.validation.validator import exact_verdict

    river = _ferries()["river"]
    first = Turn(index=1, answer=RagAnswer(answer="It is the River Ferry of Brenmouth."),
                 generated=GeneratedTurn(
                     rag_input="What is the River Ferry?", standalone_question="What is the River Ferry?",
                     ground_truth="A ferry.", question_type="initial", evidence="# River Ferry"))

    def asked(message: str, standalone: str, evidence: str) -> GeneratedTurn:
        return GeneratedTurn(rag_input=message, standalone_question=standalone,
                             ground_truth=evidence, question_type="follow_up", evidence=evidence)

    owner = asked("Who owns it?", "Who owns the River Ferry?", "It is owned by the Ardle Trust.")
    assert exact_verdict(owner, DocumentGroup.of(river), [first], role=PRECISE).valid
    quay = asked("When do boats leave the Old Quay?",
                 "When do boats of the River Ferry leave the Old Quay?",
                 "Boats leave the Old Quay every 60 minutes.")
    verdict = exact_verdict(quay, DocumentGroup.of(river), [first], role=PRECISE)
    assert verdict.categories == ["rag_input_not_connected"] and '"quay"' in verdict.feedback
    # a premise states its fact in full: that turn tests correcting, not memory
    premise = "Boats leave the Old Quay every 90 minutes."
    stated = quay.model_copy(update={"premise": premise,
                                     "rag_input": f"{premise} When do they leave it?"})
    assert exact_verdict(stated, DocumentGroup.of(river), [first], role=mistaken.ROLE).valid


def test_a_phrase_that_tells_the_document_apart_becomes_a_pronoun_once_said() -> None:
    river = _ferries()["river"]
    said = ["What does the river ferry do?", "Boats leave the Old Quay every 60 minutes."]
    # "the Old Quay" singles out the river ferry among the look-alikes; said, it is "it"
    message = unnamed("What is there at the Old Quay?", said, river)
    assert message == "What is there at it?" and told_apart(message, river) is None
    # not said: "it" would refer to nothing, so the message stays for the validator to judge
    assert unnamed("What is there at the Old Quay?", said[:1], river) == (
        "What is there at the Old Quay?")
    # a message that names nothing of its own is sent as it is
    assert unnamed("Who owns it?", said, river) == "Who owns it?"


def test_a_first_question_the_look_alikes_share_must_name_its_topic() -> None:
    river = _ferries()["river"]
    reason = names_its_topic("How often do ferries leave?", river)
    assert reason is not None and "name the one it asks about" in reason
    assert names_its_topic("When do boats leave the Old Quay?", river) is None
    # a document loaded alone has nothing to be told apart from
    assert names_its_topic("How often do ferries leave?",
                           Document(id="river", text=river.text)) is None


def test_a_first_question_that_says_its_title_names_its_topic() -> None:
    # the other documents mention the harbour and its ferry as often as the ferry's own does,
    # so its words alone tell nothing apart; its title's "Harbour Ferry" does
    harbour, *_ = known_together([
        Document(id="harbour", text="# Brenmouth Harbour Ferry\n\nThe ferry leaves the harbour "
                                    "every 30 minutes. It is owned by the city."),
        Document(id="trams", text="# Brenmouth Tram Network\n\nTrams stop at the harbour, where "
                                  "the ferry leaves. They are owned by the city."),
        Document(id="bikes", text="# Brenmouth Bike-Share\n\nA station at the harbour serves the "
                                  "ferry. It is owned by the city.")])
    assert names_its_topic("Who owns the Brenmouth Harbour Ferry?", harbour) is None
    assert names_its_topic("Who owns the harbour ferry?", harbour) is None
    # its words apart, or only the words every title has, leave it open
    for question in ("Who owns the ferry at the harbour?", "Who owns the ferry in Brenmouth?"):
        assert names_its_topic(question, harbour) is not None, question
