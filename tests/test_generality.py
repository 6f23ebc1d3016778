"""The engine knows no example's vocabulary: the examples demonstrate, they do not define.

A word of the example knowledge bases that is not a general English word (wordfreq's Zipf
frequency under :data:`GENERAL`, about once in 300,000 words of English: "Brenmouth",
"ferries", "trams", "phlebotomist") must not appear in the package's code: its names, its
string constants, its prompt templates. Docstrings and comments may illustrate with the
examples.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

wordfreq = pytest.importorskip("wordfreq")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_ragdive"
KNOWLEDGE_BASES = [ROOT / "example_project" / "kb", ROOT / "example_clinic" / "kb"]
GENERAL = 3.5
#: words of the examples the package may use, each with its reason
ALLOWED = {
    "holm": "Holm's step-down method, the verdict's multiple-testing correction",
}
_WORD = re.compile(r"[A-Za-z][a-z]+")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def code_words(source: str) -> Iterator[tuple[str, int]]:
    """The words of ``source``'s names and string constants, docstrings left out, with
    their lines."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = "" if id(node) in docstrings else node.value
        else:
            text = next((getattr(node, a) for a in ("id", "name", "arg", "attr")
                         if isinstance(getattr(node, a, None), str)), "")
        for word in _WORD.findall(text):
            yield word.lower(), getattr(node, "lineno", 0)


def example_words() -> set[str]:
    return {w.lower() for kb in KNOWLEDGE_BASES for path in kb.glob("*.md")
            for w in _WORD.findall(path.read_text(encoding="utf-8"))}


def domain_words(words: Iterator[tuple[str, int]], vocabulary: set[str]) -> list[tuple[str, int]]:
    return [(w, line) for w, line in words
            if w in vocabulary and w not in ALLOWED
            and wordfreq.zipf_frequency(w, "en") < GENERAL]


def test_both_knowledge_bases_are_read() -> None:
    assert all(len(list(kb.glob("*.md"))) >= 8 for kb in KNOWLEDGE_BASES)


def test_the_package_code_holds_no_word_of_an_example() -> None:
    vocabulary = example_words()
    found = [f"{path.relative_to(ROOT)}:{line}: {word}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for word, line in domain_words(code_words(path.read_text(encoding="utf-8")),
                                            vocabulary)]
    found += [f"{path.relative_to(ROOT)}:{n}: {word}"
              for path in sorted((ROOT / "prompts").rglob("*.j2"))
              for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              for word, _ in domain_words(((w.lower(), n) for w in _WORD.findall(line)),
                                          vocabulary)]
    assert found == []


def test_the_check_finds_a_pattern_written_for_one_example() -> None:
    source = ('"""Who runs the ferries of Brenmouth? (a docstring may say so)"""\n'
              'KINDS = [(r"trams|ferries are in service", "How big is its fleet?")]\n'
              "def skellness_fare(): ...\n")
    assert sorted({w for w, _ in domain_words(code_words(source), example_words())}) == [
        "ferries", "skellness", "trams"]
