"""The RAG-DIVE method, free of pytest, one package per stage of the paper (section 3), each
importing only those below it: base, text, documents, generation, validation, evaluation,
roles, conversation.

``conversation`` runs a dialogue and reads top to bottom as the method: each turn is written
by ``generation`` (stage 1, the Conversation Generator), checked by ``validation`` (stage 2,
the Conversation Validator; a rejected attempt is written again with its feedback), sent to
the bot under test, and the finished dialogue is scored by ``evaluation`` (stage 3, the
Conversation Evaluator). The simulated user's ``roles`` each hold what they ask, check and
score; ``documents`` are what conversations are about; ``text`` holds the English word heuristics;
``base`` the data model, settings, prompt templates and judge profiles (what each judge model
is trusted with) every stage shares. Calibrating a judge is not part of a run: it is
:mod:`pytest_ragdive.calibration`. Model calls go through
:mod:`pytest_ragdive.llm`.
"""
