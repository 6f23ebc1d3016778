"""Jinja2 prompt templates of pytest-ragdive (installed as ``pytest_ragdive.prompts``)."""
