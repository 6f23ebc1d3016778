"""The six RAG-DIVE metrics and this project's roles' own (premise_corrected, clarified). A
plain module: the plugin reads it at start-up."""

#: Metric name -> True when higher is better. Forgetfulness is the one where 0 is best.
METRICS: dict[str, bool] = {
    "correctness": True,
    "faithfulness": True,
    "context_precision": True,
    "context_recall": True,
    "forgetfulness": False,
    "context_retention": True,
    "premise_corrected": True,
    "clarified": True,
}
#: Judged from turn 2 on, over the conversation up to the turn.
MULTI_TURN_METRICS = ("forgetfulness", "context_retention")
#: Metric -> the role whose dialogues it scores (on its follow-ups, from turn 2 on): in the
#: default set for that role only; a dialogue without a turn of that role's kind leaves it
#: unscored. The roles hold their metrics' judges (:mod:`..roles`); an added role's metric
#: joins this table and METRICS.
ROLE_METRICS: dict[str, str] = {"premise_corrected": "mistaken", "clarified": "vague"}
