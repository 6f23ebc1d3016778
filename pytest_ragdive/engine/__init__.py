"""The RAG-DIVE method, free of pytest: the data model (``models``), the settings table
(``settings``), the three stages (``generator``, ``validator`` with its exact ``checks``,
``evaluator``), the ``dialogue`` that runs them against a RAG system (a turn generated and
validated in ``turns``, the system under test asked in ``asking``), the ``metrics`` and the
prompt ``templates``; ``groups`` of documents one conversation moves between, whose turns
``sources`` checks; each judge model's ``profiles`` (what it is trusted with), measured by
``calibration`` on the labelled ``cases``. Model calls go through :mod:`pytest_ragdive.llm`."""
