"""Stage 3, the Conversation Evaluator: each turn's scores in [0, 1], and a dialogue's
means.

``evaluator`` scores a dialogue: the binary judges (``binary``: correctness, forgetfulness,
context retention, and the roles' own metrics) read P(yes) against the judge profile's
threshold; ragas' metrics (``ragas_metrics``) go through the same client and cache. Hands
on the dialogue's ``scores`` and ``errors``, which the plugin compares with its bands."""
