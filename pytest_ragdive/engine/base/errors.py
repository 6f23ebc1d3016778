"""The errors of the engine: a setting it cannot take, and what ends one dialogue (and
only it: ``arun_dialogue`` records it)."""


class DialogueError(Exception):
    """The conversation could not be completed; the message names the turn and cause."""


class GenerationError(DialogueError):
    """The generator wrote no turn the validator accepts: a failure of the test's own
    harness, not evidence about the bot."""


class DocumentExhausted(GenerationError):
    """No attempt at a follow-up was accepted, and every fact of the document was asked
    before it: the document is too short for the turns asked (:mod:`..generation.exhausted`)."""


class SettingError(ValueError):
    """A setting with a value it cannot take; the message names it and what it accepts."""
