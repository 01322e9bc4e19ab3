"""Task files: what ``ladder launch -f`` reads, checked against the task file's JSON Schema (``task.schema.json``,
built from the API's allocation request by ``ladder_cli.taskschema``) before anything is sent, then turned into the
request body of ``POST /api/v1/allocations``.

Every problem names the file and the line it is on (``task.yaml:7: gpus: 12 is greater than the maximum of 8``):
the YAML is composed into nodes first, so each value keeps the line it was written on. No network here: names of
SSH keys and volumes are turned into ids by a resolver the caller passes in.
"""

from __future__ import annotations

import difflib
import json
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from jsonschema.exceptions import ValidationError, best_match

from ladder_cli.errors import USAGE, CliError

# The allocation request's own fields; every other field of a task file is its workload's.
REQUEST_FIELDS = (
    *("name", "rung", "gpu_model", "gpu_models", "gpus", "mig_profile", "share", "nodes", "regions", "gang"),
    *("capacity_class", "reservation", "on_preemption", "cpu", "memory_gib"),
)
SHOWN = 10  # problems shown at most; the rest are counted

Where = tuple[str | int, ...]
# Given "ssh_keys" or "volumes", the caller's own by name -> id (called once per kind, and only when a name is used).
Resolver = Callable[[str], Mapping[str, int]]
KINDS = {"ssh_keys": ("SSH key", "ladder ssh-keys"), "volumes": ("volume", "ladder volumes")}


class TaskFileError(CliError):
    """A task file that cannot be sent: one line per problem on stderr, each naming the file and line; exit 2."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems[0] if problems else "bad task file", USAGE)
        self.problems = problems

    def line(self) -> str:
        shown = [f"ladder: {problem}" for problem in self.problems[:SHOWN]]
        if len(self.problems) > SHOWN:
            shown.append(f"ladder: ... and {len(self.problems) - SHOWN} more")
        return "\n".join(shown)


@dataclass
class Task:
    """A task file as loaded: its data, where each value and key was written, and each scalar's source text."""

    source: str
    data: Any
    lines: dict[Where, int] = field(default_factory=dict)  # 1-based line of each value
    keys: dict[Where, int] = field(default_factory=dict)  # 1-based line of each mapping key
    raw: dict[Where, str] = field(default_factory=dict)  # a scalar as written (``yes``, ``1.10``)
    problems: list[tuple[int, str]] = field(default_factory=list)  # found while loading (a key given twice)

    def line(self, path: Where) -> int:
        """The line of ``path``'s value, or of its nearest ancestor written in the file."""
        for end in range(len(path), -1, -1):
            found = self.lines.get(path[:end]) or self.keys.get(path[:end])
            if found:
                return found
        return 1

    def key_line(self, path: Where) -> int:
        """The line of ``path``'s key (where a block value starts on the line after it)."""
        return self.keys.get(path) or self.line(path)

    def problem(self, path: Where, text: str) -> str:
        return f"{self.source}:{self.line(path)}: {text}"


def dotted(path: Iterable[str | int]) -> str:
    """A field as the API names it in its errors: ``volumes.0.mount_path``."""
    return ".".join(str(part) for part in path)


def schema() -> dict[str, Any]:
    """The task file's JSON Schema, as shipped in the package (``ladder task-schema`` prints it)."""
    return dict(json.loads(resources.files("ladder_cli").joinpath("task.schema.json").read_text()))


# --- loading -------------------------------------------------------------------------------------------------


class _Builder:
    """Walks the composed YAML, building plain data and noting the line of every value."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.loader = yaml.SafeLoader("")
        self.open: set[int] = set()  # the collections being built: an alias to one of them is a loop

    def build(self, node: yaml.Node, path: Where) -> Any:
        line = self.task.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.CollectionNode):
            if id(node) in self.open:
                self.task.problems.append((line, f"{self.task.source}:{line}: {dotted(path)}: refers to itself"))
                return None
            self.open.add(id(node))
            try:
                if isinstance(node, yaml.MappingNode):
                    return self._mapping(node, path)
                return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
            finally:
                self.open.discard(id(node))
        value = self.loader.construct_object(node)
        self.task.raw[path] = str(node.value)
        return str(node.value) if isinstance(value, date) else value  # a date is text to the API

    def _mapping(self, node: yaml.MappingNode, path: Where) -> dict[str, Any]:
        self.loader.flatten_mapping(node)  # merge keys (<<: *base)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                self.task.problems.append((line, f"{self.task.source}:{line}: a key must be a name"))
                continue
            key = str(key_node.value)
            here = (*path, key)
            if key in out:
                first = self.task.keys[here]
                text = f"{dotted(here)}: given twice (first on line {first})"
                self.task.problems.append((line, f"{self.task.source}:{line}: {text}"))
            self.task.keys[here] = line  # the last one given is the one that counts
            out[key] = self.build(value_node, here)
        return out


def load(text: str, source: str) -> Task:
    """Parse a task file's text; a YAML syntax error names its line. The data is not checked yet (``check``)."""
    task = Task(source=source, data=None)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        task.data = None if node is None else _Builder(task).build(node, ())  # a tag it cannot build fails here
    except yaml.MarkedYAMLError as error:
        mark, begun = error.problem_mark or error.context_mark, error.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        context = error.context
        if context and begun is not None and mark is not None and begun.line != mark.line:
            context = f"{context} (begun on line {begun.line + 1})"
        what = " ".join(part for part in (context, error.problem) if part)
        raise TaskFileError([f"{where}: not valid YAML: {what}"]) from error
    except yaml.YAMLError as error:
        raise TaskFileError([f"{source}: not valid YAML: {error}"]) from error
    if node is None:
        raise TaskFileError([f"{source}: empty: a task file gives at least name, rung, gpu_model and a shape"])
    return task


def read(path: str) -> Task:
    """Load the file at ``path`` (``-``: standard input)."""
    if path == "-":
        return load(sys.stdin.read(), "<stdin>")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot read the task file {path}: {error.strerror or error}", USAGE) from error
    except UnicodeDecodeError as error:
        raise CliError(f"{path}: not a text file (UTF-8)", USAGE) from error
    return load(text, path)


# --- checking ------------------------------------------------------------------------------------------------


def _unknown_keys(task: Task, error: ValidationError) -> list[tuple[int, str]]:
    """An unknown key: the line it is written on, and the known key it is closest to."""
    path = tuple(error.absolute_path)
    known = list(error.schema.get("properties", {}))
    out = []
    for key in error.instance:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else f" (known: {', '.join(known)})"
        here = (*path, key)
        line = task.key_line(here)
        out.append((line, f"{task.source}:{line}: {dotted(here)}: unknown key{hint}"))
    return out


def _mismatch(branch: ValidationError) -> bool:
    """The branch is for another type of value altogether (``null``, or a type the value is not)."""
    if branch.relative_path:
        return False
    return branch.validator == "type" or (branch.validator == "enum" and branch.validator_value == [None])


def _either(error: ValidationError) -> tuple[Where, str]:
    """An anyOf or oneOf error, said by the branch for the value's type (or as the types it may have)."""
    branches = list(error.context or [])
    if branches and all(branch.validator == "type" and not branch.relative_path for branch in branches):
        types = " or ".join(repr(branch.validator_value) for branch in branches)
        return tuple(error.absolute_path), f"{error.instance!r} is not of type {types}"
    relevant = [branch for branch in branches if not _mismatch(branch)] or branches
    chosen = best_match(relevant) if relevant else error
    if chosen.validator in ("anyOf", "oneOf") and chosen is not error:
        return _either(chosen)
    return tuple(chosen.absolute_path), chosen.message


def _exactly_one(task: Task, error: ValidationError) -> list[tuple[int, str]]:
    """A group of keys of which exactly one is given (``gpus``, ``mig_profile``, ``share``, ``nodes``)."""
    path: Where = tuple(error.absolute_path)
    keys = [branch["required"][0] for branch in error.validator_value]
    given = [key for key in keys if key in error.instance]
    if not given:
        line = task.line(path)
        return [(line, f"{task.source}:{line}: missing: give one of {', '.join(keys)}")]
    line = task.key_line((*path, given[1]))
    return [(line, f"{task.source}:{line}: {', '.join(given)}: give only one of {', '.join(keys)}")]


def _problems(task: Task, error: ValidationError) -> list[tuple[int, str]]:
    path: Where = tuple(error.absolute_path)
    if error.validator == "oneOf" and all(set(branch) == {"required"} for branch in error.validator_value):
        return _exactly_one(task, error)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        return _unknown_keys(task, error)
    if error.validator == "required":
        wanted = [key for key in error.validator_value if key not in error.instance]
        missing = (*path, wanted[0] if wanted else "?")
        line = task.key_line(path)
        return [(line, f"{task.source}:{line}: {dotted(missing)}: missing (required)")]
    message = error.message
    if error.validator in ("anyOf", "oneOf"):
        path, message = _either(error)
    text = f"{dotted(path)}: {message}" if path else message
    return [(task.line(path), task.problem(path, text))]


def problems(task: Task) -> list[str]:
    """Everything wrong with the task against the schema, in the order of the file."""
    found = list(task.problems)
    if not isinstance(task.data, dict):
        found.append(
            (task.line(()), f"{task.source}:{task.line(())}: a task file is a mapping of keys: name, rung, ...")
        )
    else:
        validator = jsonschema.Draft202012Validator(schema())
        for error in validator.iter_errors(task.data):
            found += _problems(task, error)
    unique = dict.fromkeys(text for _, text in sorted(found, key=lambda item: item[0]))
    return list(unique)


def check(task: Task) -> Task:
    """The task, or a TaskFileError listing every problem."""
    found = problems(task)
    if found:
        raise TaskFileError(found)
    return task


# --- the request body ----------------------------------------------------------------------------------------


def _text(task: Task, path: Where, value: Any) -> str:
    """A scalar as the person wrote it (``yes`` stays ``yes``, ``1.10`` stays ``1.10``)."""
    return value if isinstance(value, str) else task.raw.get(path, json.dumps(value))


class _Names:
    """The caller's SSH keys and volumes by name, asked for once each and only when a name is used."""

    def __init__(self, task: Task, resolve: Resolver, errors: list[str]) -> None:
        self.task, self.resolve, self.errors = task, resolve, errors
        self.known: dict[str, Mapping[str, int]] = {}

    def id(self, kind: str, value: Any, path: Where) -> Any:
        if not isinstance(value, str):
            return value
        if kind not in self.known:
            self.known[kind] = self.resolve(kind)
        found = self.known[kind].get(value)
        if found is None:
            noun, command = KINDS[kind]
            yours = ", ".join(sorted(self.known[kind])) or "none yet"
            text = f"{dotted(path)}: you have no {noun} named {value!r} (yours: {yours}; `{command}` lists them)"
            self.errors.append(self.task.problem(path, text))
        return found


def request_body(task: Task, resolve: Resolver) -> dict[str, Any]:
    """The body of ``POST /api/v1/allocations`` for a checked task: the request's own fields at the top, the
    workload's under ``workload``, each as the API takes it (command and args split as a shell would, env as
    ``[{name, value}]``, SSH keys and volumes, the model cache's too, by id, a share's fraction as a decimal
    string)."""
    data: dict[str, Any] = task.data
    errors: list[str] = []
    names = _Names(task, resolve, errors)
    body = {key: data[key] for key in REQUEST_FIELDS if key in data}
    workload = {key: value for key, value in data.items() if key not in REQUEST_FIELDS}
    if "share" in body:
        fraction = body["share"]["fraction"]
        body["share"] = {**body["share"], "fraction": _text(task, ("share", "fraction"), fraction)}
    for key in ("command", "args"):
        if isinstance(workload.get(key), str):
            try:
                workload[key] = shlex.split(workload[key])
            except ValueError as error:
                errors.append(task.problem((key,), f"{key}: cannot be split as a shell would: {error}"))
    if isinstance(workload.get("env"), dict):
        workload["env"] = [
            {"name": name, "value": _text(task, ("env", name), value)} for name, value in workload["env"].items()
        ]
    if "ssh_keys" in workload:
        workload["ssh_keys"] = [
            names.id("ssh_keys", key, ("ssh_keys", index)) for index, key in enumerate(workload["ssh_keys"])
        ]
    if "volumes" in workload:
        workload["volumes"] = [
            {**volume, "volume": names.id("volumes", volume["volume"], ("volumes", index, "volume"))}
            if "volume" in volume
            else volume
            for index, volume in enumerate(workload["volumes"])
        ]
    if isinstance(workload.get("model"), dict) and "volume" in workload["model"]:
        cache = names.id("volumes", workload["model"]["volume"], ("model", "volume"))
        workload["model"] = {**workload["model"], "volume": cache}
    if errors:
        raise TaskFileError(errors)
    if workload:
        body["workload"] = workload
    return body
