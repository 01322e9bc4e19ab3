"""``manage.py master_key_rotate``: re-wrap every tenant key under the current (first) master key of
LADDER_MASTER_KEYS. Data keys and content are not touched; run it again safely after an interruption, then
remove the old master key from the setting."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from compliance.domain.envelope import EnvelopeError
from compliance.services.assets import master_key_rotate, master_ring
from core.actor import Actor


class Command(BaseCommand):
    help = "Re-wrap tenant keys under the current master key (data is not re-encrypted)."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            ring = master_ring()
            counts = master_key_rotate(actor=Actor.system("master-key-rotate"))
        except (ValueError, EnvelopeError) as exc:
            raise CommandError(f"Master key rotation failed: {exc}") from None
        self.stdout.write(
            f"Tenant keys under master {ring.current_id}: {counts['rewrapped']} re-wrapped, "
            f"{counts['current']} already current, {counts['shredded']} shredded (skipped)."
        )
