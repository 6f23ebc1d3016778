"""Profile files: the JSON form of judge profiles (:mod:`~pytest_ragdive.engine.base.profile`), read and checked
whole (a missing, malformed or stale file is one error naming it and the fix), and
written so that they read well in a review.

The form::

    {"format": 1,
     "profiles": {"<litellm model name>": {"judges": "sha256 ...", "calibrated": "...",
                                           "rewrite_follow_ups": true, "follow_ups": "...",
                                           "judgements": {"correctness": {...}, ...}}}}

A profile is stale when the judges' prompts changed since it was calibrated: its
thresholds were fitted for other questions (``judges``, :func:`judges_digest`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..engine.base.profile import (
    COMMAND,
    JUDGEMENTS,
    PLAIN,
    RAGAS,
    VALIDATOR,
    Judgement,
    Profile,
    ProfileError,
    Profiles,
    parse,
    shipped,
)
from ..engine.evaluation.binary import BINARY_JUDGES
from ..engine.validation.validator import QUESTIONS
from ..files import atomic_write_text

FORMAT = 1


def load(path: Path, shown: str | None = None) -> Profiles:
    """The profiles of the file at ``path`` (``shown`` as its name in messages) over the
    shipped ones; :class:`ProfileError` when it is missing, malformed or stale."""
    name = shown or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(
            f"the judge profile file {name} cannot be read ({exc.strerror or exc}); calibrate "
            f"a model into it with: {COMMAND.format(model='<model>', out=name)}, or leave "
            f"ragdive_profiles out to use the shipped profiles") from None
    profiles = parse(text, name)
    digest = judges_digest()
    for model, profile in profiles.items():
        if profile.judges != digest:
            raise ProfileError(
                f"the judge profile of {model} in {name} is stale: it was calibrated with other "
                f"judge prompts ({profile.judges or 'none recorded'} -> {digest}), so its "
                f"thresholds were fitted for other questions. Calibrate it again with: "
                f"{COMMAND.format(model=model, out=name)}")
    return Profiles(profiles, name)


def dumps(profiles: Mapping[str, Profile]) -> str:
    """A profile file's text: sorted keys, indent 2, figures rounded."""
    doc = {"format": FORMAT,
           "profiles": {m: p.model_dump(mode="json", exclude=_unset(p))
                        for m, p in sorted(profiles.items())}}
    return json.dumps(_rounded(doc), indent=2, sort_keys=True) + "\n"


def _unset(profile: Profile) -> set[str] | None:
    """What a profile file leaves out: the served names of a profile that has none."""
    return None if profile.served_as else {"served_as"}


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def write(path: Path, model: str, profile: Profile) -> None:
    """Put ``model``'s profile into the file at ``path``, keeping the other models'; a file
    there that is not a profile file is an error, and left as it is."""
    profiles: dict[str, Profile] = {}
    if path.exists():
        profiles = parse(path.read_text(encoding="utf-8"), str(path))
    atomic_write_text(path, dumps({**profiles, model: profile}))


@functools.cache
def judges_digest() -> str:
    """The digest of what the judges ask: their templates, questions and the validator's
    checks. A profile calibrated with other ones is stale."""
    from importlib.resources import files

    folder = files("pytest_ragdive.prompts")
    names = [*BINARY_JUDGES, "validator", "conversation"]
    texts = [f"{n}\n{folder.joinpath(f'{n}.j2').read_text(encoding='utf-8')}" for n in names]
    text = "\n".join([*texts, repr(sorted((m, j.question, j.negation, j.against_key, j.per_part)
                                          for m, j in BINARY_JUDGES.items())), repr(QUESTIONS)])
    return f"sha256 {hashlib.sha256(text.encode()).hexdigest()[:12]}"


def legacy(model: str) -> Profile:
    """How the package judged ``model`` before it had profiles: as its shipped profile says,
    else every check asked at the thresholds fitted to the embedded model. A band recorded
    then, which records no profile, was scored so."""
    if model in shipped():
        return shipped()[model]
    judgements = {m: Judgement(informative=True, threshold=j.threshold)
                  for m, j in BINARY_JUDGES.items()}
    judgements |= {v: Judgement(informative=True, threshold=PLAIN) for v in VALIDATOR}
    judgements |= {m: Judgement(informative=True, threshold=None, reading="score")
                   for m in RAGAS}
    return Profile(judgements=judgements)


_READ = {"logprobs": "first-token P(yes)", "text": "the reply's first word",
         "score": "ragas' score"}


def table(profile: Profile) -> str:
    """A profile as a Markdown table, one judgement a row."""

    def interval(pair: tuple[float, float] | None) -> str:
        return f" [{pair[0]:.2f}, {pair[1]:.2f}]" if pair else ""

    lines = [("| judgement | informative | threshold | read from | balanced accuracy [95%] "
              "| AUC [95%] | cases | measured on |"), "|---|---|---|---|---|---|---|---|"]
    for name in JUDGEMENTS:
        j = profile.judgement(name)
        accuracy = ("" if j.balanced_accuracy is None
                    else f"{j.balanced_accuracy:.3f}{interval(j.interval)}")
        auc = "" if j.auc is None else f"{j.auc:.3f}{interval(j.auc_interval)}"
        threshold = "score" if j.threshold is None else f"{j.threshold:g}"
        lines.append(f"| {name} | {'yes' if j.informative else '**no**'} | {threshold} "
                     f"| {_READ[j.reading]} | {accuracy} | {auc} | {j.cases or ''} "
                     f"| {j.measured} |")
    sent = "rewritten" if profile.rewrite_follow_ups else "sent as written"
    why = profile.follow_ups or "not measured"
    lines.append(f"| follow-up messages | {sent} | | | | | | {why} |")
    return "\n".join(lines) + "\n"
