"""The typed pieces documented request models share, and how a query value is checked
against its schema.

The OpenAPI description (openapi.py) and the services that validate a documented query
(services/board.py) both read them, so a field's rule is written once: in its model.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BaseModel, Field

from benchmark import SPLITS, TRACKS

from .converters import MAX_ID
from .inputs import YES_WORDS

SCHEMAS = "#/components/schemas/{model}"
#: Text without the control characters every input refuses (see inputs.CONTROL).
NO_CONTROLS = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f]*$"


def one_of(values: Iterable[str], description: str | None = None) -> Any:
    """A string field whose values are fixed at run time (tracks, splits, columns)."""
    return Field(description=description, json_schema_extra={"enum": list(values)})


Track = Annotated[str, one_of(TRACKS)]
#: The words a yes/no form field takes (the form's own list; it also ignores case).
YesNo = Annotated[str, one_of(word for word in YES_WORDS if word)]
Split = Annotated[str, one_of(SPLITS)]


def plain(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A field's schema as a form or query value: "or null" dropped (a value is sent or not;
    null only says it may be left out), references inlined, no title."""
    prop = {k: v for k, v in prop.items() if k != "title"}
    variants = [v for v in prop.pop("anyOf", []) if v.get("type") != "null"]
    if len(variants) == 1:
        prop = {**variants[0], **prop}
    if "$ref" in prop:
        prop = {**defs[prop.pop("$ref").rsplit("/", 1)[-1]], **prop}
    if "default" in prop and prop["default"] is None:
        del prop["default"]
    prop.pop("title", None)
    return prop


@functools.lru_cache(maxsize=128)
def parameters(model: type[BaseModel], where: str) -> list[dict[str, Any]]:
    """OpenAPI parameters from a model's fields (its JSON Schema, one property each); made
    once per model, so callers must not change them."""
    schema = model.model_json_schema(ref_template=SCHEMAS)
    required, defs = set(schema.get("required", [])), schema.get("$defs", {})
    found = []
    for name, prop in schema["properties"].items():
        value = plain(prop, defs)
        parameter = {"name": name, "in": where, "required": where == "path" or name in required,
                     "description": value.pop("description", "")}
        if "x-columns-by-split" in value:
            parameter["x-columns-by-split"] = value.pop("x-columns-by-split")
        found.append({**parameter, "schema": value})
    return found


def value_problem(schema: dict[str, Any], value: str) -> str | None:
    """Why a query value does not fit its documented schema, or None when it does."""
    if "enum" in schema and value not in schema["enum"]:
        return f"choose one of {', '.join(map(str, schema['enum']))}"
    if schema.get("type") == "integer":
        if not (value.isascii() and value.isdigit()):
            return "must be a whole number"
        low, high = schema.get("minimum", 0), schema.get("maximum", MAX_ID)
        if not low <= int(value) <= high:
            return f"must be between {low} and {high}"
    if len(value) > schema.get("maxLength", len(value)):
        return f"must have at most {schema['maxLength']} characters"
    return None
