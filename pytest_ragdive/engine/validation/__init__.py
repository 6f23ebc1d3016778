"""Stage 2, the Conversation Validator: accept or reject a generated turn.

``validator`` runs the exact checks (``checks``: of the turn itself; ``sources``: its
evidence against its document; the conversation checks of :mod:`..generation.follow_ups`;
the role's own) and then the validator model's yes/no checks its judge profile trusts.
Hands on a verdict: accepted, or rejected with feedback the generator writes the turn
again with."""
