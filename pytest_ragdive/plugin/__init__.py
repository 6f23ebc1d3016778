"""The pytest side: the hooks (``hooks``, the pytest11 entry point), ``options`` from the
settings table, the ``marker`` and ``fixtures``, the ``session`` that runs an item's
dialogues (``scheduling``), and the gate: ``bands``, ``aggregate`` and the ``report``."""
