"""The parts of ``benchmarks/bench.py``, the benchmark of the plugin's scheduling:
``workload`` (what is run), ``runner`` (the timed pytest sessions), ``probe`` (the
instrumented in-process dialogues), ``simulation`` (the engine's structure and ideal
schedule) and ``tables`` (the report)."""
