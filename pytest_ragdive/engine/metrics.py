"""The six RAG-DIVE metrics. A plain module: the plugin reads it at start-up."""

#: Metric name -> True when higher is better. Forgetfulness is the one where 0 is best.
METRICS: dict[str, bool] = {
    "correctness": True,
    "faithfulness": True,
    "context_precision": True,
    "context_recall": True,
    "forgetfulness": False,
    "context_retention": True,
}
#: Judged from turn 2 on, over the conversation up to the turn.
MULTI_TURN_METRICS = ("forgetfulness", "context_retention")
