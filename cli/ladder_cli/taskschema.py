"""The task file's JSON Schema, built from the allocation request in Ladder's OpenAPI schema (`make sdk` writes it
to ``task.schema.json``; ``ladder task-schema`` prints it).

A task file is the allocation request flattened: the request's own fields (``name``, ``rung``, ``gpus``,
``mig_profile``, ``share``, ``gpu_model``, ``regions``, ``gang``, ...) and the workload's (``image``, ``command``,
``env``, ``ports``, ``volumes``, ``framework``, ``os_image``, ``cloud_init``, ``ssh_keys``, ...) side by side at
the top, each taking what the API takes, with five conveniences a person writing YAML expects: ``command`` and
``args`` may be one string (split as a shell would), ``env`` may be a mapping, ``ssh_keys``, a volume's ``volume``
and ``model.volume`` may name the key or the volume instead of giving its id, and ``share.fraction`` may be a number
(``0.25``, as YAML reads it) as well as the API's decimal string. Unknown keys are refused, as the API does.
"""

from __future__ import annotations

import copy
from typing import Any

SCHEMA_ID = "https://ladder.dev/schemas/task.schema.json"
REQUEST = "AllocationRequestRequest"
WORKLOAD = "WorkloadRequest"
_DROP = ("readOnly", "writeOnly")


def _convert(node: Any, refs: set[str]) -> Any:
    """OpenAPI 3.0's schema dialect to JSON Schema 2020-12: ``$defs`` references, ``nullable`` as a null type."""
    if isinstance(node, list):
        return [_convert(item, refs) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP or key == "nullable":
            continue
        if key == "$ref":
            name = value.rsplit("/", 1)[1]
            refs.add(name)
            out[key] = f"#/$defs/{name}"
        else:
            out[key] = _convert(value, refs)
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    if "properties" in out and out.get("type", "object") == "object":
        out["additionalProperties"] = False
    return out


# What the request's own check adds to its fields (api.allocations.AllocationRequestSerializer.validate), so that
# a task file breaking it is refused before it is sent: exactly one key of each group.
ONE_OF = (("gpu_model", "gpu_models"), ("gpus", "mig_profile", "share", "nodes"))


def _one_of(keys: tuple[str, ...]) -> dict[str, Any]:
    return {"description": f"Exactly one of {', '.join(keys)}.", "oneOf": [{"required": [key]} for key in keys]}


def _one_or_many_strings(schema: dict[str, Any], what: str) -> dict[str, Any]:
    return {"description": what, "anyOf": [{"type": "string", "minLength": 1}, schema]}


def task_schema(openapi: dict[str, Any]) -> dict[str, Any]:
    schemas = openapi["components"]["schemas"]
    refs: set[str] = set()
    request = copy.deepcopy(schemas[REQUEST])
    workload = copy.deepcopy(schemas[WORKLOAD])
    properties = {key: value for key, value in request["properties"].items() if key != "workload"}
    properties.update(workload["properties"])
    properties = _convert(properties, refs)

    for key in ("command", "args"):
        properties[key] = _one_or_many_strings(properties[key], "A list, or one string split as a shell would.")
    mapping = {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}}
    properties["env"] = {
        "description": "Plain values: a mapping NAME: value, or a list of {name, value}. Secrets for anything else.",
        "anyOf": [mapping, properties["env"]],
    }
    properties["ssh_keys"]["items"] = {"anyOf": [properties["ssh_keys"]["items"], {"type": "string", "minLength": 1}]}
    properties["ssh_keys"]["description"] = "Your SSH keys, by name or id (ladder ssh-keys)."

    definitions: dict[str, Any] = {}
    pending = set(refs)
    while pending:
        name = pending.pop()
        found: set[str] = set()
        definitions[name] = _convert(schemas[name], found)
        pending |= found - definitions.keys()
    volume = definitions["VolumeRequest"]["properties"]["volume"]
    definitions["VolumeRequest"]["properties"]["volume"] = {
        "description": "A volume of yours, by name or id (ladder volumes): it outlives the allocation.",
        "anyOf": [{k: v for k, v in volume.items() if k != "description"}, {"type": "string", "minLength": 1}],
    }
    model = definitions["WorkloadModelRequest"]["properties"]["volume"]
    definitions["WorkloadModelRequest"]["properties"]["volume"] = {
        "description": "Your model cache: one of the volumes this task mounts, by name or id (ladder volumes).",
        "anyOf": [{k: v for k, v in model.items() if k != "description"}, {"type": "string", "minLength": 1}],
    }
    share = definitions["ShareRequest"]["properties"]
    share["fraction"] = {
        "description": share["fraction"].pop("description", "Share of one GPU."),
        "anyOf": [share["fraction"], {"type": "number", "minimum": 0.001, "maximum": 0.999}],
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Ladder task file",
        "description": (
            "What `ladder launch -f` reads: one allocation request, its workload's fields beside its own "
            "(docs/cli.md#task-files)."
        ),
        "type": "object",
        "properties": dict(sorted(properties.items())),
        "required": sorted(request.get("required", [])),
        "allOf": [_one_of(keys) for keys in ONE_OF],
        "additionalProperties": False,
        "$defs": dict(sorted(definitions.items())),
    }
