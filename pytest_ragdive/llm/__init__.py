"""Model access: the one client (``client``), the response cache (``cache``), the usage ledger
(``usage``) and the providers served in process (the ``embedded`` model, the ``scripted`` test
provider). Nothing here knows about dialogues or pytest."""
