"""Errors a service raises when a rule of the product refuses an action.

Each carries a stable snake_case ``code`` (the API returns it in problem+json) and a sentence a person
understands. ``status`` is the HTTP status the API answers with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class ServiceError(Exception):
    """``field`` names the one input at fault; ``errors`` maps each of several inputs to its messages; ``extra``
    adds members to the problem body (e.g. a placement refusal's ``reasons``)."""

    status = 409

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        status: int | None = None,
        field: str | None = None,
        errors: Mapping[str, Sequence[str]] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.field = field
        self.errors = errors
        self.extra = dict(extra or {})
        if status is not None:
            self.status = status


class Conflict(ServiceError):
    """The request is valid but the current state forbids it (409)."""


class Invalid(ServiceError):
    """The request breaks a rule about its own content (422)."""

    status = 422


class Forbidden(ServiceError):
    """The actor's role does not allow the action (403)."""

    status = 403


class Unavailable(ServiceError):
    """The action cannot be done now but may be soon (503); ``retry_after`` seconds become the ``Retry-After``
    header."""

    status = 503

    def __init__(self, code: str, detail: str, *, retry_after: int, **kwargs: Any) -> None:
        super().__init__(code, detail, **kwargs)
        self.retry_after = retry_after


class TooManyRequests(ServiceError):
    """A rate limit refuses the call (429); ``retry_after`` seconds (when the count starts again) become the
    ``Retry-After`` header."""

    status = 429

    def __init__(self, code: str, detail: str, *, retry_after: int, **kwargs: Any) -> None:
        super().__init__(code, detail, **kwargs)
        self.retry_after = retry_after
