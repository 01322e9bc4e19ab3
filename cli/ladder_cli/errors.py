"""Exit codes and how a refusal reads.

0 done; 1 refused by Ladder (the problem's code on stderr) or Ladder unreachable; 2 bad usage (a bad option, a
bad task file); 3 not signed in, or the key refused; 4 not found. Every failure is one readable line on stderr:
``ladder: <what> (<code>)``, naming the field or the reason.
"""

from __future__ import annotations

import json
import sys
from typing import Any

DONE, REFUSED, USAGE, NOT_SIGNED_IN, NOT_FOUND = 0, 1, 2, 3, 4


class CliError(Exception):
    """A failure that ends the command with its exit code and one line on stderr (``ladder_cli.main.main``)."""

    def __init__(self, message: str, exit_code: int = REFUSED, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.code = code

    def line(self) -> str:
        return f"ladder: {self.message} ({self.code})" if self.code else f"ladder: {self.message}"

    def show(self) -> None:
        sys.stderr.write(self.line() + "\n")


def _reason(reason: Any) -> str:
    """A refusal's reason in words: its message (``{"code", "message"}``), or what it is."""
    if isinstance(reason, dict):
        return str(reason.get("message") or reason.get("code") or "")
    return str(reason)


def _problem_text(problem: dict[str, Any]) -> str:
    """One line: the field errors of a validation error, else the detail and its reasons."""
    errors = problem.get("errors")
    if isinstance(errors, dict) and errors:
        return "; ".join(f"{field}: {' '.join(map(str, messages))}" for field, messages in errors.items())
    text = str(problem.get("detail") or problem.get("title") or "refused")
    said = (_reason(reason) for reason in problem.get("reasons") or [])
    reasons = list(dict.fromkeys(reason for reason in said if reason not in text))
    return f"{text}: {'; '.join(reasons)}" if reasons else text


def refusal(status: int, content: bytes) -> CliError:
    """The CliError for an answer Ladder gave with an error status (problem+json, or whatever came back)."""
    try:
        problem = json.loads(content)
    except ValueError:
        problem = None
    if not isinstance(problem, dict):
        problem = {"detail": content.decode(errors="replace").strip()[:200] or f"HTTP {status}", "code": None}
    code = problem.get("code") or f"http_{status}"
    if status == 401:
        hint = " (run `ladder login`, or check LADDER_API_KEY)"
        return CliError(f"the API key was refused: {_problem_text(problem)}{hint}", NOT_SIGNED_IN, code)
    if status == 404:
        return CliError(_problem_text(problem), NOT_FOUND, code)
    return CliError(f"refused: {_problem_text(problem)}", REFUSED, code)
