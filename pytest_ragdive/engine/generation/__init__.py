"""Stage 1, the Conversation Generator: an LLM playing a user writes the next turn.

``generator`` asks the model for a turn: the message sent to the bot, its stand-alone
question, the answer key from the document and the question type. The plugin chooses what a
follow-up asks (``facts``, by its kind in ``kinds``), shapes the message as a user would
type it (``follow_ups``), and says why a document has nothing left to ask (``exhausted``);
the role adds its own part (:mod:`..roles`). Hands on a
:class:`~pytest_ragdive.engine.base.models.GeneratedTurn` to validation."""
