"""What a model call costs in tokens, for the estimates made before any call (a run's, a
calibration's): English prompts counted by their characters, the fixed parts by measure."""

#: characters per token, for an estimate of English prompts
CHARS_PER_TOKEN = 4
#: tokens of one of ragas' calls: its instructions and examples are repeated in every call,
#: ~1,200 prompt tokens (benchmarks/README.md: 70% of a 3-turn dialogue's ~31k prompt
#: tokens in 18 ragas calls), and a JSON reply of a few statements
RAGAS_PROMPT, RAGAS_REPLY = 1200, 150
#: the generator's prompt besides the document and the conversation, and its JSON reply
GENERATOR_PROMPT, GENERATOR_REPLY = 700, 80
