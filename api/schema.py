"""The OpenAPI schema made fit for client generators (drf-spectacular's postprocessing hook).

drf-spectacular describes the success answers; this pass adds what a generated client needs to be trusted:

- every error answer an operation can give carries its problem+json shape (the ``Problem`` component, see
  ``api/problems.py``): the codes an operation declares, plus 401 and 403 where a key is needed, 404 where the
  path names something, 422 where a body or a query is read, and 429 everywhere (every answer may be throttled);
- no anonymous inline enum: a query parameter's choices are the named enum that holds the same values, or a
  named enum of their own (``<Tag><Parameter>Enum``), so a generator makes one type per set of values, not one per
  operation;
- enums drf-spectacular names after a bare field name get a name that says what they are (``RENAMED``), and
  two enums with the same values become one.

Operation ids and tags come from the path below ``/api/v1`` (``SCHEMA_PATH_PREFIX``): ``allocations_list``, tag
``allocations``; the SDK has one module per tag.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from api.problems import PROBLEM_CONTENT_TYPE

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "An error (RFC 9457). `code` is stable and names the rule; a refusal may add fields of its own "
        "(`errors` for validation, `reasons`, `sku`, `holds`, ...)."
    ),
    "properties": {
        "type": {"type": "string", "description": "urn:ladder:problem:<code>"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string", "description": "Stable, snake_case: what to branch on."},
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
            "description": "validation_error: the messages of each field (`field.sub` inside a nested body).",
        },
        "reasons": {"type": "array", "items": {"type": "string"}, "description": "Every reason for a refusal."},
    },
    "required": ["type", "title", "status", "detail", "code"],
    "additionalProperties": True,
}

# Enums named after a bare field name, renamed to what they hold.
RENAMED = {
    "AsEnum": "SecretExposedAsEnum",
    "StatusEnum": "MoveStatusEnum",
    "StepEnum": "ClosureStepEnum",
    "SourceEnum": "RetentionSourceEnum",
    "FormatEnum": "ExportFormatEnum",
    "ScopesEnum": "ApiKeyScopeEnum",
}

_ERRORS_ALWAYS = (429,)
_ERRORS_AUTHENTICATED = (401, 403)
_METHODS = ("get", "put", "post", "patch", "delete")


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").split("_") if part)


def _rename(node: Any, renames: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {
            key: (
                "#/components/schemas/" + renames[value.rsplit("/", 1)[1]]
                if key == "$ref" and isinstance(value, str) and value.rsplit("/", 1)[-1] in renames
                else _rename(value, renames)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_rename(item, renames) for item in node]
    return node


def _named_enums(schemas: dict[str, Any]) -> dict[frozenset[Any], str]:
    return {
        frozenset(schema["enum"]): name
        for name, schema in sorted(schemas.items())
        if name.endswith("Enum") and isinstance(schema.get("enum"), list)
    }


def _duplicate_enums(schemas: dict[str, Any]) -> list[set[str]]:
    """Named enums holding the same values (two serializers' fields with the same choices): one is kept."""
    groups: dict[frozenset[Any], set[str]] = {}
    for name, schema in schemas.items():
        if name.endswith("Enum") and isinstance(schema.get("enum"), list):
            groups.setdefault(frozenset(schema["enum"]), set()).add(name)
    return [names for names in groups.values() if len(names) > 1]


def _name_parameter_enums(operation: dict[str, Any], tag: str, schemas: dict[str, Any]) -> None:
    by_values = _named_enums(schemas)
    for parameter in operation.get("parameters", []):
        schema = parameter.get("schema", {})
        target = schema.get("items", schema) if schema.get("type") == "array" else schema
        values = target.get("enum")
        if not isinstance(values, list):
            continue
        name = by_values.get(frozenset(values))
        if name is None:
            name = f"{_camel(tag)}{_camel(parameter['name'])}Enum"
            schemas[name] = {"type": target.get("type", "string"), "enum": values}
            by_values[frozenset(values)] = name
        keep = {key: value for key, value in target.items() if key in ("description", "default")}
        ref = {"$ref": f"#/components/schemas/{name}"}
        replacement = {"allOf": [ref], **keep} if keep else ref
        if target is schema:
            parameter["schema"] = replacement
        else:
            schema["items"] = replacement


def _problem_answer(status: int, described: dict[str, Any] | None) -> dict[str, Any]:
    description = (described or {}).get("description") or HTTPStatus(status).phrase
    return {
        "description": description,
        "content": {PROBLEM_CONTENT_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }


def _error_codes(path: str, method: str, operation: dict[str, Any]) -> set[int]:
    codes = {int(code) for code in operation.get("responses", {}) if code.isdigit() and int(code) >= 400}
    codes.update(_ERRORS_ALWAYS)
    if operation.get("security") != [{}] and {} not in operation.get("security", []):
        codes.update(_ERRORS_AUTHENTICATED)
    if "{" in path:
        codes.add(404)
    if "requestBody" in operation or any(p.get("in") == "query" for p in operation.get("parameters", [])):
        codes.add(422)
    return codes


def postprocess(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular's ``POSTPROCESSING_HOOKS`` entry (after its own enum pass)."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    renames = {old: new for old, new in RENAMED.items() if old in schemas}
    for old, new in renames.items():
        schemas[new] = schemas.pop(old)
    for same in _duplicate_enums(schemas):
        kept = min(same, key=lambda name: (len(name), name))
        for name in same - {kept}:
            renames[name] = kept
            del schemas[name]
    result = _rename(result, renames)
    schemas = result["components"]["schemas"]
    schemas["Problem"] = PROBLEM_SCHEMA
    for path, item in result.get("paths", {}).items():
        for method in _METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            _name_parameter_enums(operation, (operation.get("tags") or ["api"])[0], schemas)
            responses = operation.setdefault("responses", {})
            for status in sorted(_error_codes(path, method, operation)):
                responses[str(status)] = _problem_answer(status, responses.get(str(status)))
            operation["responses"] = dict(sorted(responses.items()))
    result["components"]["schemas"] = dict(sorted(schemas.items()))
    return result
