"""English word heuristics: words, stop words, stems, and how much a word says among texts.

Every exact check and every choice the plugin makes about a message's words goes through
here; they hold for English text only.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

_WORD = re.compile(r"[\w'-]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
STOPWORDS = frozenset(
    ["a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "but", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "has", "have", "had", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "many", "much", "long", "far", "often", "there", "their", "they", "them", "it", "its", "this", "that", "these", "those", "he", "she", "his", "her", "one", "ones", "i", "you", "we", "me", "my", "your", "our", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "about", "into", "than", "then", "so", "if", "not", "no", "yes", "any", "some", "all", "each", "every", "more", "most", "less", "least", "also", "just", "only", "very", "too", "as", "up", "down", "out", "over", "under", "again", "please", "tell", "know", "say", "said", "like", "get", "got"]
)


#: the least share of a text's words that are :data:`STOPWORDS` for it to be read as English
ENGLISH_SHARE = 0.12


@functools.lru_cache(maxsize=256)
def is_english(text: str) -> bool:
    """Whether ``text`` reads as English to these heuristics: English prose has about three times
    :data:`ENGLISH_SHARE` of its words among the stop words, German or French far less."""
    every = [w for w in words(text) if w and not w.isdigit()]
    return not every or sum(w in STOPWORDS for w in every) >= ENGLISH_SHARE * len(every)


def words(text: str) -> list[str]:
    return [w.lower().strip("'-") for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w and w not in STOPWORDS and not w.isdigit()]


def singular(word: str) -> str:
    """``word`` as comparisons of words take it: a plural's "s" dropped ("lines" -> "line")."""
    plural = len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))
    return word[:-1] if plural else word


def word_weights(held: Sequence[AbstractSet[str]]) -> dict[str, float]:
    """Each word's weight among texts, given each text's words: log(texts / texts that
    hold it), 0 for a word every text holds."""
    counts = Counter(w for ws in held for w in ws)
    return {w: math.log(len(held) / n) for w, n in counts.items()}


@functools.lru_cache(maxsize=256)
def _held(text: str) -> frozenset[str]:
    return frozenset(singular(w) for w in content_words(text))


def singles_out(message: str, own: str, others: Sequence[str]) -> list[str]:
    """The words of ``message`` by which it alone picks out the text ``own`` among
    ``others`` (the weight of its words that ``own`` holds is greater than any other
    text's, weights by :func:`word_weights`), rarest first; [] when it does not. A
    follow-up that does can be answered by a bot that kept no conversation."""
    if not others:
        return []
    held = [_held(text) for text in (own, *others)]
    weight = word_weights(held)
    asked = {singular(w): w for w in content_words(message)}
    score = [math.fsum(weight[w] for w in asked.keys() & ws) for ws in held]  # any set order
    if score[0] <= max(score[1:]):
        return []
    return [asked[w] for w in sorted(asked.keys() & held[0], key=lambda w: (-weight[w], w))
            if weight[w] > 0]


def numbers(text: str) -> list[str]:
    return _NUMBER.findall(text)


def normalized(text: str) -> str:
    return " ".join(words(text))


def repeated_subject(rag_input: str, questions: Sequence[str], answers: Sequence[str] = ()) -> str | None:
    """The phrase of the conversation that ``rag_input`` repeats instead of referring to
    it: two content words in a row from an earlier question, or a name (a capitalized
    word inside a sentence) from an earlier question or answer."""
    mine = content_words(rag_input)
    pairs = {" ".join(p) for p in zip(mine, mine[1:])}
    names = {w.lower() for w in re.findall(r"(?<!^)(?<![.?!] )\b[A-Z][\w-]+", rag_input)}
    names -= STOPWORDS
    for question in questions:
        theirs = content_words(question)
        for pair in zip(theirs, theirs[1:]):
            if " ".join(pair) in pairs:
                return " ".join(pair)
    for text in (*questions, *answers):
        shared = names & set(content_words(text))
        if shared:
            return sorted(shared)[0]
    return None


def overlap(a: str, b: str) -> float:
    x, y = set(content_words(a)), set(content_words(b))
    return len(x & y) / len(x | y) if x | y else 1.0


_SUFFIX = re.compile(r"(?:ship|ing|ion|ed|er|or|es|e|s)$")


def stem(word: str) -> str:
    """``word`` with its endings taken off while three letters stay ("ownership", "owned" ->
    "own"; "operator", "operates" -> "operat"): words of one family, for choosing which part
    of an answer key a question asks (:func:`.answer_keys.key_parts`)."""
    word = singular(word.removesuffix("'s"))
    while (cut := _SUFFIX.sub("", word)) != word and len(cut) >= 3:
        word = cut
    return word


def same_word(a: str, b: str) -> bool:
    """Whether two words are one word in another form ("owns", "owned"; "bus", "buses")."""
    a, b = sorted((singular(a), singular(b)), key=len)
    return a == b or (len(a) >= 3 and b.startswith(a) and len(b) - len(a) <= 3)


def is_question(message: str) -> bool:
    """A message a user types to ask: at least two words and a question mark."""
    return message.rstrip().endswith("?") and len(words(message)) >= 2


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def supporting_sentences(evidence: str, document: str) -> list[str]:
    """The document's sentences that ``evidence`` may quote: those holding at least half of
    its content words (a small model shortens and rewords its quotes)."""
    wanted = set(content_words(evidence)) or set(words(evidence))
    return [
        sentence.strip() for sentence in _SENTENCE.split(document)
        if wanted and len(wanted & set(words(sentence))) >= len(wanted) / 2
    ]
