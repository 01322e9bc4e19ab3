"""``manage.py seed_demo [--json]``: the demo tenants, people and staff that ``make run`` shows.

Idempotent: tenants and accounts are created once; passwords are reset to the demo ones; each run issues a
fresh demo API key per person (revoking the previous demo key), since a stored key's secret can never be
shown again. Refuses to run with DEBUG off unless ``--force``: known passwords do not belong in production.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from compliance.actor import Actor
from tenancy.models import ApiKey, ApiKeyScope, Tenant
from tenancy.roles import StaffRole, TenantRole
from tenancy.services import api_key_create, api_key_revoke, member_invite, staff_user_create, tenant_signup

User = get_user_model()

DEMO_KEY_NAME = "demo"


@dataclass(frozen=True)
class DemoTenant:
    name: str
    owner: str
    members: dict[str, TenantRole] = field(default_factory=dict)


TENANTS = {
    "acme": DemoTenant("Acme Robotics", "alice", {"bob": TenantRole.MEMBER}),
    "globex": DemoTenant("Globex Research", "charlie"),
}
STAFF = {"finance": StaffRole.FINANCE, "compliance": StaffRole.COMPLIANCE, "operator": StaffRole.OPERATOR}


def demo_password(username: str) -> str:
    return f"{username}-ladder-demo"


class Command(BaseCommand):
    help = "Create or refresh the demo tenants, users, staff and API keys."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print exactly one JSON object to stdout.")
        parser.add_argument("--force", action="store_true", help="Run even with DEBUG off.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError("seed_demo creates accounts with known passwords; run it with DEBUG=1 or --force.")
        result = self.seed()
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write("Demo logins (password / API key):")
        for slug, tenant in result["tenants"].items():
            for username, creds in tenant["users"].items():
                self.stdout.write(f"  {slug:8} {username:10} {creds['password']:24} {creds['api_key']}")
        for username, creds in result["staff"].items():
            self.stdout.write(f"  {'staff':8} {username:10} {creds['password']:24} {creds['api_key']}")

    @transaction.atomic
    def seed(self) -> dict[str, Any]:
        actor = Actor.system("seed_demo")
        out: dict[str, Any] = {"tenants": {}, "staff": {}}
        for slug, spec in TENANTS.items():
            owner = spec.owner
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None:
                tenant = tenant_signup(
                    slug=slug,
                    name=spec.name,
                    username=owner,
                    email=f"{owner}@{slug}.example",
                    password=None,
                    actor=actor,
                )
            for username, role in spec.members.items():
                if not User.objects.filter(username=username).exists():
                    member_invite(
                        tenant=tenant,
                        actor_role=TenantRole.OWNER,
                        username=username,
                        email=f"{username}@{slug}.example",
                        role=role,
                        actor=actor,
                    )
            users = [owner, *spec.members]
            out["tenants"][slug] = {"users": {u: self._credentials(u, actor) for u in users}}
        for username, staff_role in STAFF.items():
            if not User.objects.filter(username=username).exists():
                staff_user_create(username=username, role=staff_role, password=demo_password(username), actor=actor)
            out["staff"][username] = self._credentials(username, actor)
        return out

    def _credentials(self, username: str, actor: Actor) -> dict[str, str]:
        user = User.objects.get(username=username)
        user.set_password(demo_password(username))
        user.save(update_fields=["password"])
        for old in ApiKey.objects.filter(user=user, name=DEMO_KEY_NAME, revoked_at=None):
            api_key_revoke(key=old, actor=actor)
        issued = api_key_create(
            user=user, name=DEMO_KEY_NAME, scopes=[ApiKeyScope.READ, ApiKeyScope.WRITE], expires_at=None, actor=actor
        )
        return {"password": demo_password(username), "api_key": issued.token}
