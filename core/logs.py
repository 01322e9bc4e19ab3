"""Structured logs: one line per event, JSON in production (``LOG_FORMAT=json``) or aligned text for a person
(``console``), each carrying the context of the request or task it belongs to.

- The context lives in contextvars (``structlog.contextvars``): a request binds ``request_id`` (and ``route``,
  then ``tenant_id`` and ``actor`` once the API knows the caller, ``allocation_id`` when the URL names one); a
  Celery task binds ``task_id``, ``task`` and the ``request_id`` of the request that queued it (carried in the
  message's headers), plus ``allocation_id`` / ``tenant_id`` when its arguments are named so.
- Every stdlib ``logging`` call in the code comes out through the same ``structlog.stdlib.ProcessorFormatter``
  as structlog's own loggers, so one formatter decides every line's shape.
- ``redact`` runs last before rendering: a value under a key named like a secret (password, secret, token,
  authorization, api_key, cookie, private or key material) is replaced, and API tokens, Stripe keys and bearer
  credentials are masked inside any text. Request bodies are never logged.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, MutableMapping
from contextvars import Token
from functools import cache
from typing import Any

import structlog
from structlog.contextvars import bind_contextvars, get_contextvars, reset_contextvars
from structlog.typing import EventDict, Processor

REDACTED = "[redacted]"
# Keys whose values are secrets, whatever their case or separators: api_key, X-Api-Key, client_secret, ...
SECRET_KEY_NAMES = re.compile(
    r"pass(word|wd|phrase)?|secret|token|authori[sz]ation|api[-_]?key|cookie|credential|private[-_]?key|"
    r"key[-_]?material|signing[-_]?key|master[-_]?keys?|kubeconfig|^key$",
    re.IGNORECASE,
)
# Secrets recognisable inside free text: Ladder API tokens (the prefix stays: it names the key, as audit events
# do), Stripe secret, restricted and webhook keys, and bearer / basic credentials.
SECRET_PATTERNS = (
    (re.compile(r"\b(ldr_[0-9a-f]{8}_)[A-Za-z0-9_\-]{8,}"), r"\1" + REDACTED),
    (re.compile(r"\b((?:sk|rk)_(?:live|test)_|whsec_)[A-Za-z0-9]{6,}"), r"\1" + REDACTED),
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=\-]{6,}", re.IGNORECASE), r"\1 " + REDACTED),
)
# A message header carrying the enqueuing request's id to the task (Celery copies headers onto ``task.request``).
REQUEST_ID_HEADER = "ladder_request_id"


def _scrub_text(text: str) -> str:
    for pattern, replacement in SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def scrub(value: Any) -> Any:
    """``value`` with every secret in it redacted: mappings by key name (recursively), sequences item by item,
    text by pattern."""
    if isinstance(value, str):
        return _scrub_text(value)
    if isinstance(value, Mapping):
        return {
            k: REDACTED if isinstance(k, str) and SECRET_KEY_NAMES.search(k) and v not in (None, "") else scrub(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


def redact(logger: Any, method_name: str, event_dict: EventDict) -> EventDict:
    """The structlog processor: the event's secrets redacted (see ``scrub``)."""
    return scrub(event_dict)


def shared_processors() -> list[Processor]:
    """What every line goes through before it is rendered, structlog's and stdlib's alike."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
    ]


def renderer(log_format: str) -> Processor:
    if log_format == "console":
        return structlog.dev.ConsoleRenderer(colors=False, sort_keys=False)
    return structlog.processors.JSONRenderer(sort_keys=False)


def formatter(log_format: str) -> dict[str, Any]:
    """A ``logging.config`` formatter entry: stdlib records and structlog events rendered alike."""
    final: list[Processor] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if log_format == "json":
        final.append(structlog.processors.format_exc_info)  # the traceback as a field of the one JSON line
    final += [redact, renderer(log_format)]
    return {
        "()": structlog.stdlib.ProcessorFormatter,
        "foreign_pre_chain": shared_processors(),
        "processors": final,
    }


def logging_config(*, log_format: str, level: str) -> dict[str, Any]:
    """Django's ``LOGGING``: one console handler with the ``LOG_FORMAT`` formatter on the root logger."""
    if log_format not in ("json", "console"):
        raise ValueError(f"LOG_FORMAT must be json or console, not {log_format!r}")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"structured": formatter(log_format)},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "structured"}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # The Stripe SDK logs two INFO lines per request: at a thousand meter events a second, noise and CPU.
            "stripe": {"level": "WARNING"},
            # Django's own request log repeats what ``core.requests`` logs, without the request id.
            "django.request": {"level": "ERROR"},
            "django.server": {"level": "WARNING"},
        },
    }


def structlog_configure() -> None:
    """structlog's own loggers hand their events to stdlib logging, so the formatter above renders them."""
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared_processors(),
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


# --- context ----------------------------------------------------------------------------------------------------

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")


def request_id_accept(sent: str | None) -> str | None:
    """The caller's ``X-Request-ID`` when it is sane (1 to 128 characters of letters, digits and ``. _ : -``);
    None otherwise, and a new id is made."""
    if sent is not None and _REQUEST_ID.fullmatch(sent):
        return sent
    return None


def context_bind(**values: Any) -> None:
    """Add to the current request's or task's log context (None values are left out)."""
    bind_contextvars(**{k: v for k, v in values.items() if v is not None})


def current_request_id() -> str | None:
    value = get_contextvars().get("request_id")
    return value if isinstance(value, str) else None


# Celery: the context of a task, restored when it ends (a worker thread runs many tasks; an eager task runs inside
# the request that queued it and must hand that request its context back).
_task_tokens: dict[str, Mapping[str, Token[Any]]] = {}


@cache
def _named_ids(task_name: str, run: Any) -> tuple[tuple[int, str], ...]:
    """Positions of a task's parameters named ``allocation_id`` / ``tenant_id`` (read once per task)."""
    try:
        parameters = list(inspect.signature(run).parameters)
    except (TypeError, ValueError):  # pragma: no cover - a builtin: nothing to read
        return ()
    return tuple((i, name) for i, name in enumerate(parameters) if name in ("allocation_id", "tenant_id"))


def task_publish(headers: MutableMapping[str, Any] | None = None, **_: Any) -> None:
    """``before_task_publish``: the enqueuing request's id travels in the message's headers."""
    request_id = current_request_id()
    if headers is not None and request_id is not None:
        headers[REQUEST_ID_HEADER] = request_id


def task_started(task_id: str | None = None, task: Any = None, args: Any = None, kwargs: Any = None, **_: Any) -> None:
    """``task_prerun``: bind the task's id and name, the request id it came with, and its named ids."""
    if task is None or task_id is None:
        return
    values: dict[str, Any] = {"task_id": task_id, "task": task.name}
    request_id = getattr(task.request, REQUEST_ID_HEADER, None) or current_request_id()
    if isinstance(request_id, str) and request_id_accept(request_id):
        values["request_id"] = request_id
    args, kwargs = list(args or ()), dict(kwargs or {})
    for position, name in _named_ids(task.name, task.run):
        value = kwargs.get(name, args[position] if position < len(args) else None)
        if isinstance(value, int):
            values[name] = value
    _task_tokens[task_id] = bind_contextvars(**values)


def task_finished(task_id: str | None = None, **_: Any) -> None:
    """``task_postrun``: the context as it was before the task."""
    tokens = _task_tokens.pop(task_id or "", None)
    if tokens is not None:
        reset_contextvars(**tokens)


def get_logger(name: str) -> Any:
    return structlog.stdlib.get_logger(name)
