"""Who did something: the actor every service receives and every audit event records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Actor:
    type: str  # "user" | "api_key" | "system"
    id: str
    label: str
    api_key_prefix: str = ""
    user: Any = None  # the acting user, when there is one

    @property
    def log_label(self) -> str:
        """How log lines name the actor: ``user:<id>``, ``api_key:<id>/<prefix>``, ``system:<name>``."""
        if self.type == "system":
            return f"system:{self.label}"
        key = f"/{self.api_key_prefix}" if self.api_key_prefix else ""
        return f"{self.type}:{self.id}{key}"

    @classmethod
    def system(cls, name: str = "system") -> Actor:
        return cls(type="system", id="system", label=name)

    @classmethod
    def for_user(cls, user: Any, api_key: Any = None) -> Actor:
        if api_key is not None:
            return cls(
                type="api_key", id=str(user.pk), label=user.get_username(), api_key_prefix=api_key.prefix, user=user
            )
        return cls(type="user", id=str(user.pk), label=user.get_username(), user=user)
