"""The error that ends one dialogue (and only it: ``arun_dialogue`` records it)."""


class DialogueError(Exception):
    """The conversation could not be completed; the message names the turn and cause."""
