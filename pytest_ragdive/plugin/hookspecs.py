"""The hooks a project implements, in a ``conftest.py``, to extend pytest-ragdive."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ..engine.roles.role import Role

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_ragdive_roles() -> list[Role]:  # type: ignore[empty-body]
    """Return the roles this project adds (:class:`pytest_ragdive.Role`), usable as
    ``role="<name>"`` in the marker or the ini file for the whole session. A role's own
    metric (:class:`pytest_ragdive.RoleMetric`) is then scored in its dialogues and banded
    like the others. Read before collection (from the rootdir's conftest, for the ini file)
    and as each test module is collected."""
