"""The simulated user's roles: what each asks next, its exact checks, its own metric and its
settings, one module per role behind one protocol (``role``). Built in: the personas
(``personas``: precise, context-aware, forgetful, skeptic, and a role in free text),
``mistaken`` (a false premise), ``vague`` (a question with several readings) and
``switching`` (a detour to another document and back); ``registry`` holds them and the roles
users add (the ``pytest_ragdive_roles`` hook)."""
