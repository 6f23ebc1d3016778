"""Dialogues that start from what real users asked first.

An openers file is JSONL, one opening message per line: ``{"message": "..."}``, optionally
with ``"document"``, the id of the document it concerns. A dialogue about a document starts
from one of that document's openers, or else of those that name no document, drawn by seed.
The generator still writes the answer key from the document; an opener the document cannot
answer ends its dialogue saying so, it is never replaced by a question of the generator's.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from ..base.models import Document, DocumentGroup


class Opener(BaseModel):
    """One real user's first message, and the document it concerns if known."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    message: str
    document: str | None = None


def load_openers(source: str | Path, *, root: Path) -> tuple[Opener, ...]:
    """The openers of a JSONL file (relative paths from ``root``); a line that is not one
    names its line number and what is wrong."""
    path = Path(source) if Path(source).is_absolute() else root / source
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"openers file {str(path)!r} not found") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                         f"save it as UTF-8") from None
    openers = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            opener = Opener.model_validate(json.loads(line))
        except (ValueError, ValidationError) as exc:
            first = str(exc).splitlines()
            raise ValueError(f"{path}:{number}: not an opener ({first[0] if first else exc}); "
                             f'each line is {{"message": "...", "document": "<id>"}}, '
                             f"the document optional") from None
        if not opener.message.strip():
            raise ValueError(f"{path}:{number}: the message is empty")
        openers.append(opener)
    if not openers:
        raise ValueError(f"{path}: no openers in the file")
    return tuple(openers)


def check_documents(openers: Sequence[Opener], documents: Sequence[Document], where: str) -> None:
    """Every document an opener names is one of ``documents``."""
    known = {d.id for d in documents}
    unknown = sorted({o.document for o in openers if o.document and o.document not in known})
    if unknown:
        raise ValueError(f"{where}: openers name documents that are not among the test's: "
                         f"{', '.join(map(repr, unknown))} (documents: "
                         f"{', '.join(sorted(known))})")


def opener_for(openers: Sequence[Opener], group: DocumentGroup, seed: int) -> str | None:
    """The first message of a dialogue about ``group`` (of one document or more) at
    ``seed``: one of the openers of its documents, else of those naming no document; None
    when there is none."""
    ids = {d.id for d in group.documents}
    own = [o.message for o in openers if o.document in ids]
    pool = own or [o.message for o in openers if o.document is None]
    if not pool:
        return None
    return random.Random(f"{group.id}|{seed}").choice(pool)
