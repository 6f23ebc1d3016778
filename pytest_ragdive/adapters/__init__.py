"""Connectors to the RAG systems under test, outside the method: ``http`` (a bot behind
an HTTP JSON API), ``langchain`` (a Runnable), ``llamaindex`` (a chat or query engine). Each
imports its library on first use."""
