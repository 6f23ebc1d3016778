"""A dialogue, run as the paper's three stages: ``dialogue`` holds the loop (generate and
validate a turn in ``turns``, ask the bot under test in ``asking``, then evaluate), and
hands on a scored :class:`~pytest_ragdive.engine.base.models.Dialogue`."""
