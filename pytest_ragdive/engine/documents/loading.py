"""Loading source documents from files."""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Iterable
from pathlib import Path

from ..base.models import Document

SUFFIXES = (".md", ".txt", ".jsonl")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: the longest document a conversation is held about: every prompt of the generator and
#: the validator holds the whole document, and past this (about 250,000 tokens) it is more
#: than the usual judge models take, and a knowledge base rather than one topic
MOST_CHARACTERS = 1_000_000


def safe_id(text: str) -> str:
    """A document id usable as a pytest parametrize id and a file name."""
    cleaned = _UNSAFE.sub("-", text).strip("-.")
    if not cleaned:
        raise ValueError(f"document id {text!r} has no letters or digits")
    return cleaned


def load_documents(source: str | Path, *, root: Path | None = None) -> list[Document]:
    """Documents from a file, folder or glob of ``.md``/``.txt`` files (one document each,
    id = file stem) or ``.jsonl`` files (one per line: ``id``, ``text``, optional
    ``metadata``). Relative paths are taken from ``root`` (default: the current folder).
    Sorted by id; duplicate ids are an error. Each document knows the others' texts
    (:func:`known_together`).
    """
    base = Path(root) if root is not None else Path.cwd()
    pattern = Path(source) if Path(source).is_absolute() else base / source
    if pattern.is_dir():
        paths = [p for p in pattern.rglob("*") if p.suffix in SUFFIXES]
    else:
        paths = [Path(p) for p in glob.glob(str(pattern), recursive=True)]
    paths = sorted(p for p in paths if p.is_file())
    if not paths:
        raise FileNotFoundError(f"no documents match {str(source)!r} (looked in {base})")
    documents = check_unique(doc for path in paths for doc in _read(path))
    if not documents:
        raise ValueError(f"{str(source)!r} holds no documents (its .jsonl files have no "
                         f"lines); add one per line, or point at other files")
    return documents


def check_unique(documents: Iterable[Document]) -> list[Document]:
    """``documents`` sorted by id, refusing duplicate or unsafe ids."""
    seen: dict[str, Document] = {}
    for doc in documents:
        if safe_id(doc.id) != doc.id:
            raise ValueError(f"document id {doc.id!r} is not file-name safe; try {safe_id(doc.id)!r}")
        if not doc.text.strip():
            raise ValueError(f"document {doc.id!r} has no text: a conversation needs "
                             f"something to talk about")
        if len(doc.text) > MOST_CHARACTERS:
            raise ValueError(
                f"document {doc.id!r} has {len(doc.text):,} characters (about "
                f"{len(doc.text) // 4:,} tokens), over the {MOST_CHARACTERS:,} a "
                f"conversation is held about: every generator and validator prompt holds "
                f"the whole document; split it into documents of one topic each")
        if doc.id in seen:
            raise ValueError(f"two documents have the id {doc.id!r}; ids must be unique")
        seen[doc.id] = doc
    return known_together([seen[k] for k in sorted(seen)])


def known_together(documents: list[Document]) -> list[Document]:
    """``documents``, each that knows of no others given the texts of the rest: the
    documents loaded together are the knowledge base a conversation's follow-ups are told
    apart in. One that already knows its own (a subset of what was loaded) keeps them."""
    return [d if d.others else d.model_copy(update={"others": tuple(
        o.text for o in documents if o is not d)}) for d in documents]


def _read(path: Path) -> list[Document]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                         f"save it as UTF-8") from None
    return _parse(path, text)


def _parse(path: Path, text: str) -> list[Document]:
    if path.suffix == ".jsonl":
        docs = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                docs.append(Document.model_validate(json.loads(line)))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not a document ({exc})") from None
        return docs
    if path.suffix in (".md", ".txt"):
        return [Document(id=safe_id(path.stem), text=text,
                         metadata={"source": path.name})]
    raise ValueError(f"{path}: unsupported document type; use one of {', '.join(SUFFIXES)}")
