"""Which documents one conversation moves between: the groups of a test's items.

``group=N`` puts each document with the N - 1 documents nearest to it. A word's weight is
how distinctive it is, log(documents / documents that have it), so a word every document has
weighs nothing; how near two documents are is the sum of the weights of the content words
both have (names count as words, figures do not); among equally near ones the id first in
order goes first. A group reached from two of its documents is one item, so there are
between documents / N and documents items; every document is in one at least, and every
group is one of its documents with those nearest to it. A groups file lists the groups
instead, one a line: document ids separated by spaces, commas or "+" (an item id
copied as it is), ``#`` starting a comment.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ..base.models import Document, DocumentGroup
from ..base.settings import check_group
from ..text.english import content_words

_SEPARATORS = re.compile(r"[\s,+]+")


def group_documents(documents: Sequence[Document], group: int | str | Path, *,
                    root: Path) -> list[DocumentGroup]:
    """The groups of ``documents`` by ``group`` (a number: the rule of the module; a path
    relative to ``root``: a groups file; "": each document alone), sorted by id."""
    chosen = check_group(group, "")
    if chosen == "":
        return [DocumentGroup.of(d) for d in documents]
    if isinstance(chosen, int):
        found = by_shared_words(documents, chosen)
    else:
        path = Path(chosen) if Path(chosen).is_absolute() else root / chosen
        found = read_groups(path, documents)
    return sorted(found, key=lambda g: g.id)


def by_shared_words(documents: Sequence[Document], size: int) -> list[DocumentGroup]:
    """Each document with the ``size - 1`` documents nearest to it (the module's rule)."""
    if len(documents) < size:
        raise ValueError(
            f"group={size} needs at least {size} documents, and there are {len(documents)} "
            f"({', '.join(d.id for d in documents)}); lower group or add documents")
    ordered = sorted(documents, key=lambda d: d.id)
    words = [set(content_words(d.text)) for d in ordered]
    count = Counter(w for ws in words for w in ws)
    weight = {w: math.log(len(ordered) / n) for w, n in count.items()}
    groups: dict[tuple[int, ...], DocumentGroup] = {}
    for index, mine in enumerate(words):
        others = [i for i in range(len(ordered)) if i != index]
        # nearest first (fsum: the same in every process, whatever the set order); sorted()
        # keeps the id order among equals
        nearest = sorted(others, key=lambda i: -math.fsum(weight[w] for w in mine & words[i]))
        members = tuple(sorted([index, *nearest[:size - 1]]))
        groups.setdefault(members, DocumentGroup(documents=[ordered[i] for i in members]))
    return list(groups.values())


def read_groups(path: Path, documents: Sequence[Document]) -> list[DocumentGroup]:
    """The groups a file lists (see the module); an id that is not a document's, a
    document twice in a group or a group twice is an error naming the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"groups file {str(path)!r} not found; group takes a number of documents "
            f"(group=2) or the path of a file listing the groups, one a line") from None
    known = {d.id: d for d in documents}
    groups: dict[str, DocumentGroup] = {}
    for number, line in enumerate(text.splitlines(), 1):
        ids = [i for i in _SEPARATORS.split(line.split("#", 1)[0]) if i]
        if not ids:
            continue
        where = f"{path}:{number}"
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise ValueError(f"{where}: no document {unknown[0]!r} among the test's "
                             f"({', '.join(sorted(known))}); a group names document ids")
        if len(set(ids)) < len(ids):
            raise ValueError(f"{where}: a document is named twice in the group {line.strip()!r}")
        group = DocumentGroup(documents=[known[i] for i in ids])
        if group.id in groups:
            raise ValueError(f"{where}: the group {group.id!r} is listed twice")
        groups[group.id] = group
    if not groups:
        raise ValueError(f"{path}: no groups in the file; list one a line, such as "
                         f"{'+'.join(sorted(known)[:2])}")
    return list(groups.values())
