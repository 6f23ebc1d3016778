"""Whether a follow-up needs the conversation: the exact checks that it leans on what was
said (:func:`leans_back`), does not single out its document among its look-alikes
(:func:`told_apart`), and that a first question names its topic (:func:`names_its_topic`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..base.models import Document, GeneratedTurn, Turn
from ..generation.follow_ups import depends_on_conversation, said_before
from ..text.english import content_words, is_question, repeated_subject, singles_out


def leans_back(candidate: GeneratedTurn, history: Sequence[Turn],
               also_said: Sequence[str] = ()) -> str | None:
    """The exact check of a follow-up: None when its message is a question that depends on
    the conversation (and on ``also_said``, said since: a premise the message states before
    it asks) and repeats none of its subject; else what to fix."""
    said = [*said_before(history), *also_said]
    message, standalone = candidate.rag_input, candidate.standalone_question
    if not is_question(message):
        return f"rag_input {message!r} is not a question; write it as the user's question"
    phrase = repeated_subject(message, said)
    if phrase:
        return (f'rag_input repeats "{phrase}" from earlier turns; refer to it the way people '
                f'do in a chat ("it", "they", "that one") or leave it out')
    if not depends_on_conversation(message, standalone, said):
        return ("the follow-up can be understood without the conversation; ask about "
                "something the last answer talked about, named in standalone_question and "
                "referred to as \"it\" in rag_input")
    return None


def told_apart(message: str, document: Document) -> str | None:
    """None unless ``message`` names what only ``document`` holds among the documents it
    was loaded with (:func:`~..text.english.singles_out`): "When do boats leave the Old Quay?"
    finds its service without the conversation, "Who owns it?" among look-alikes does not.
    A bot that kept no history answers the first as well as one that did."""
    named = singles_out(message, document.text, document.others)
    if not named:
        return None
    quoted = ", ".join(f'"{w}"' for w in named[:4])
    return (f"rag_input says {quoted}, which only this topic has among those a user could "
            f"mean, so it can be understood without the conversation; ask it the way a user "
            f"who relies on the conversation does, with \"it\" for the topic and without "
            f"those words")


def names_its_topic(question: str, document: Document) -> str | None:
    """None when a first question tells its document apart from the documents it was
    loaded with (its words alone pick it out, :func:`~..text.english.singles_out`); else what to
    fix. "What is the name of the ferry?" where the knowledge base has two ferries leaves
    even a bot that keeps the conversation guessing, at turn 1 and at every "it" after."""
    if (not document.others or singles_out(question, document.text, document.others)
            or not singles_out(document.text, document.text, document.others)
            or says_its_title(question, document)):
        return None  # alone, told apart, named, or with no word of its own to be told apart by
    return ("the question could be about several of the services or topics a user could "
            "mean; name the one it asks about, as a user who starts a conversation does")


def says_its_title(question: str, document: Document) -> bool:
    """Whether ``question`` says two or more words of its document's title in a row, one of
    them in no other document's title: "the Harbour Ferry" names "Brenmouth Harbour Ferry"
    where the other documents only mention the harbour and the ferry, which their words alone
    (:func:`~..text.english.singles_out`) cannot tell apart."""
    title = content_words(document.subject or "")
    others = {w for text in document.others
              for w in content_words(Document(id="", text=text).subject or "")}
    asked = " ".join(content_words(question))
    return any(f" {' '.join(title[i:j])} " in f" {asked} "
               for i in range(len(title)) for j in range(i + 2, len(title) + 1)
               if set(title[i:j]) - others)
