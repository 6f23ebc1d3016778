"""The settings whose values have a form of their own, parsed and checked for the settings
table: a group of documents, and the ``floors`` and ``ceilings`` of metrics.

A floor is the least mean of a higher-is-better metric over a test function's documents, a
ceiling the greatest of a lower-is-better one (forgetfulness); each setting refuses the other
direction's metrics, naming the setting that takes them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from .errors import SettingError
from .metrics import METRICS

#: setting -> whether its metrics are the higher-is-better ones
HIGHER_IS_BETTER = {"floors": True, "ceilings": False}
#: what each setting's ini line looks like
EXAMPLE = {"floors": "correctness:0.8 faithfulness:0.7", "ceilings": "forgetfulness:0.2"}
#: what a valid group looks like
GROUP_FORM = "a number of documents >= 2, or the path of a groups file"
_PAIR = re.compile(r"([A-Za-z_]\w*)\s*[:=]\s*(\S+)")


def check_group(value: Any, where: str) -> int | str:
    """A group setting: a number of documents (2 or more), the path of a groups file, or ""
    (none: one document per conversation)."""
    if value == "":
        return value
    number = int(value) if isinstance(value, str) and value.strip().isdigit() else value
    if isinstance(number, int) and not isinstance(number, bool) and number >= 2:
        return number
    if isinstance(number, (str, PurePath)) and str(number).strip():
        return str(number).strip()
    prefix = f"{where}: " if where else ""
    raise SettingError(
        f"{prefix}group={value!r} is not {GROUP_FORM}; give group=2 to pair "
        f"documents, a file that lists the groups, or leave group out for one document per "
        f"conversation")


def parse_limits(name: str, text: str, where: str) -> dict[str, float]:
    """A ``floors`` or ``ceilings`` value from an ini line: ``metric:value`` pairs separated
    by spaces, commas or lines (``metric=value`` too)."""
    pairs = [p for p in re.split(r"[\s,;]+", re.sub(r"\s*([:=])\s*", r"\1", text.strip())) if p]
    value: dict[str, Any] = {}
    for pair in pairs:
        match = _PAIR.fullmatch(pair)
        if match is None:
            raise SettingError(
                f"{where}: {name} = {text.strip()!r}: {pair!r} is not metric:value; write "
                f"pairs such as {EXAMPLE[name]}")
        metric, number = match.groups()
        if metric in value:
            raise SettingError(f"{where}: {name} = {text.strip()!r} gives {metric} twice; "
                               f"keep one")
        try:
            value[metric] = float(number)
        except ValueError:
            raise SettingError(f"{where}: {name} {metric}:{number} is not a number; write "
                               f"pairs such as {EXAMPLE[name]}") from None
    return value


def check_limits(name: str, value: Any, where: str) -> dict[str, float]:
    """``value`` as metric -> bound when it is a mapping of metrics of the setting's direction
    to numbers in [0, 1], else :class:`SettingError` naming the cause and the fix."""
    noun = name.removesuffix("s")
    if not isinstance(value, Mapping):
        raise SettingError(f"{where}: {name}={value!r} is not a dict of metric -> {noun}, "
                           f"e.g. {name}={_as_dict(EXAMPLE[name])}")
    higher = HIGHER_IS_BETTER[name]
    checked: dict[str, float] = {}
    for metric, bound in value.items():
        if metric not in METRICS:
            raise SettingError(f"{where}: {name}: unknown metric {metric!r}; choose from "
                               f"{', '.join(m for m in METRICS if METRICS[m] == higher)}")
        if METRICS[metric] != higher:
            other, bound_of = ("ceilings", 0.2) if higher else ("floors", 0.8)
            raise SettingError(
                f"{where}: {name}: {metric} is {'lower' if higher else 'higher'}-is-better, "
                f"so it takes a {other.removesuffix('s')}, not a {noun}: give it in {other}, "
                f"e.g. {other}={{{metric!r}: {bound_of}}} (ini ragdive_{other} = "
                f"{metric}:{bound_of})")
        if (isinstance(bound, bool) or not isinstance(bound, (int, float))
                or math.isnan(bound) or not 0 <= bound <= 1):
            raise SettingError(f"{where}: {name}: {metric}={bound!r} is not a number in "
                               f"[0, 1]; metrics score from 0 to 1, so give a {noun} between")
        checked[str(metric)] = float(bound)
    return checked


def _as_dict(example: str) -> str:
    return "{" + ", ".join(f"{m!r}: {v}" for m, v in (p.split(":") for p in example.split())) + "}"
