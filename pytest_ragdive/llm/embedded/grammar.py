"""JSON output of the embedded model: every structured request becomes a llama.cpp grammar.

OpenAI ``json_schema`` response formats, llama.cpp's own ``{"type": "json_object", "schema": S}``
and a single forced tool (instructor's TOOLS mode) all constrain the output to their schema, so a
small model cannot drift out of it. The schema is taken from the request's data only; a bare
``json_object`` gets any JSON object.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from .weights import MODEL, EmbeddedModelError


def to_llama_response_format(response_format: Any) -> dict[str, Any] | None:
    """Translate an OpenAI-style ``response_format`` into llama.cpp's form.

    Returns ``{"type": "json_object", "schema": S}`` when the format carries a schema, ``{"type":
    "json_object"}`` for schemaless JSON, or None for free text.
    """
    if response_format is None:
        return None
    if isinstance(response_format, type) and hasattr(response_format, "model_json_schema"):
        return {"type": "json_object", "schema": response_format.model_json_schema()}
    if not isinstance(response_format, Mapping):
        raise EmbeddedModelError(f"unsupported response_format: {response_format!r}")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        if not isinstance(schema, Mapping):
            raise EmbeddedModelError("response_format json_schema has no 'schema' object")
        return {"type": "json_object", "schema": dict(schema)}
    if kind == "json_object":
        schema = response_format.get("schema") or response_format.get("response_schema")
        return (
            {"type": "json_object", "schema": dict(schema)} if schema else {"type": "json_object"}
        )
    raise EmbeddedModelError(f"unsupported response_format type: {kind!r}")


def forced_tool(optional_params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The one function the model must call (instructor's TOOLS mode), or None."""
    tools = optional_params.get("tools") or []
    choice = optional_params.get("tool_choice")
    if not tools or choice == "none":
        return None
    functions = [t["function"] for t in tools if t.get("type", "function") == "function"]
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name")
        matching = [f for f in functions if f.get("name") == name]
        if matching:
            return matching[0]
    if len(functions) == 1:
        return functions[0]
    raise EmbeddedModelError(
        f"{MODEL} can only call one forced tool; got {len(functions)} tools and "
        f"tool_choice={choice!r}"
    )


_ANNOTATIONS = frozenset(
    [
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
    ]
)
_ANY_JSON = {"type": ["string", "number", "boolean", "null", "object", "array"]}
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def llama_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Rewrite a JSON schema (as pydantic writes them) into what llama.cpp's converter accepts.

    Two gaps of llama-cpp-python 0.3.36's ``json_schema_to_gbnf``: a root that is itself a
    ``$ref`` (pydantic does this for recursive models) leaves the refs inside ``$defs``
    unresolved (KeyError), and a schema with only annotations (pydantic's ``Any``) is rejected.
    The root ref is hoisted and such schemas become "any JSON value". ``$defs``/``$ref`` are
    otherwise supported and kept, so recursive models still work.
    """
    root = dict(schema)
    ref = root.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for key in ref[2:].split("/"):
            target = target[key]
        root = {**target, **{k: v for k, v in root.items() if k != "$ref"}}
    return _fill_any(root)


def _fill_any(node: Any) -> Any:
    if not isinstance(node, Mapping):
        return node
    if not node.keys() - _ANNOTATIONS:
        return dict(_ANY_JSON)
    out = dict(node)
    for key in _SUBSCHEMA:
        if isinstance(out.get(key), Mapping):
            out[key] = _fill_any(out[key])
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_fill_any(item) for item in out[key]]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), Mapping):
            out[key] = {name: _fill_any(sub) for name, sub in out[key].items()}
    return out


@functools.lru_cache(maxsize=128)
def _grammar(schema_json: str) -> Any:
    from llama_cpp import LlamaGrammar

    try:
        return LlamaGrammar.from_json_schema(schema_json, verbose=False)
    except Exception as exc:  # the converter raises assorted types (KeyError, AssertionError)
        raise EmbeddedModelError(
            f"llama.cpp cannot turn this JSON schema into a grammar ({type(exc).__name__}: "
            f"{exc}); simplify the schema: {schema_json[:300]}"
        ) from exc


def grammar_for(response_format: Mapping[str, Any] | None) -> Any:
    if response_format is None:
        return None
    # llama_cpp would silently fall back to free JSON if the schema converter fails; building the
    # grammar here turns that into an error instead.
    schema = llama_schema(response_format.get("schema") or {"type": "object"})
    # no sort_keys: the grammar emits properties in schema order, which callers choose on purpose
    return _grammar(json.dumps(schema))
