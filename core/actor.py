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
    # A tenant's own member (or one of their API keys) acting for its tenant: such writes obey the tenant's
    # standing (a closing tenant only reads; ``tenancy.services.tenant_require_writable``). Staff and the product
    # itself (system actors, a workflow's steps run in the name of whoever asked) act on a tenant, not for it.
    for_tenant: bool = False

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
        """A person, or their API key. Staff belong to no tenant; anyone else acts for the tenant they belong to."""
        member = not getattr(user, "is_staff", False)
        if api_key is not None:
            return cls(
                type="api_key",
                id=str(user.pk),
                label=user.get_username(),
                api_key_prefix=api_key.prefix,
                user=user,
                for_tenant=member,
            )
        return cls(type="user", id=str(user.pk), label=user.get_username(), user=user, for_tenant=member)
