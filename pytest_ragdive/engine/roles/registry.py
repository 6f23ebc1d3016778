"""Every role by its name: the built-in ones and those a user adds (in a conftest, through
the ``pytest_ragdive_roles`` hook, which the plugin passes to :func:`add`).

A role's own metric joins :data:`~..base.metrics.METRICS` (the judge's "yes" direction) and
:data:`~..base.metrics.ROLE_METRICS` while the role is added.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..base.errors import SettingError
from ..base.metrics import METRICS, ROLE_METRICS
from . import mistaken, switching, vague
from .personas import PERSONAS, free_text
from .role import Role, RoleMetric

BUILTIN: tuple[Role, ...] = (*PERSONAS, mistaken.ROLE, vague.ROLE, switching.ROLE)
_added: dict[str, Role] = {}


def roles() -> list[Role]:
    """The built-in roles, then the added ones."""
    return [*BUILTIN, *_added.values()]


def names() -> list[str]:
    return [r.name for r in roles()]


def check_role(name: str, where: str) -> None:
    """A role's name or a sentence: a single unknown word is almost always a typo."""
    if name not in names() and len(name.split()) < 3:
        raise SettingError(
            f"{where}: unknown role {name!r}; use one of {', '.join(names())}, or describe "
            f"the persona in a sentence, or add the role with the pytest_ragdive_roles hook")


def role(name: str) -> Role:
    """The role named ``name``; a sentence is a persona played as written."""
    found = next((r for r in roles() if r.name == name), None)
    if found is not None:
        return found
    check_role(name, "role")
    return free_text(name)


def metrics() -> list[RoleMetric]:
    """The roles' own metrics, built-in then added."""
    return [r.metric for r in roles() if r.metric is not None]


def owner(metric_name: str) -> Role | None:
    """The role whose own metric ``metric_name`` is; None for a metric of every role."""
    return next((r for r in roles() if r.metric and r.metric.name == metric_name), None)


def metric(name: str) -> RoleMetric | None:
    """The role metric named ``name``; None for a metric of every role."""
    found = owner(name)
    return found.metric if found else None


def add(new: Iterable[Role], where: str) -> None:
    """Add a user's roles; adding one again is a no-op. A name or metric that is taken is a
    :class:`SettingError` naming ``where``."""
    for one in new:
        if not isinstance(one, Role):
            raise SettingError(f"{where}: {one!r} is not a pytest_ragdive Role; subclass "
                               f"pytest_ragdive.Role or build one")
        if _added.get(one.name) is one:
            continue
        if one.name in names() or len(one.name.split()) != 1:
            raise SettingError(f"{where}: the role name {one.name!r} is taken or not one word; "
                               f"choose another name")
        if one.metric is not None and one.metric.name in METRICS:
            raise SettingError(f"{where}: role {one.name!r} names its metric "
                               f"{one.metric.name!r}, which is already a metric; rename it")
        _added[one.name] = one
        if one.metric is not None:
            METRICS[one.metric.name] = one.metric.judge.yes_scores_one
            ROLE_METRICS[one.metric.name] = one.name


def clear_added() -> None:
    """Forget the added roles and their metrics (at the end of a pytest session)."""
    for one in _added.values():
        if one.metric is not None:
            METRICS.pop(one.metric.name, None)
            ROLE_METRICS.pop(one.metric.name, None)
    _added.clear()
