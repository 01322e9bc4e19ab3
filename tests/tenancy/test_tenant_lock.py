"""The tenant lock serializes changes to one tenant without holding up rows that refer to it: Django checks foreign
keys at commit on PostgreSQL (``FOR KEY SHARE``), after every other lock, so a ``FOR UPDATE`` on the tenant made a
placement holding a volume wait there while a volume delete holding the tenant waited for that volume."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, transaction

from tenancy.locks import lock_tenant
from tenancy.models import SshKey


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_row_referring_to_a_locked_tenant_commits_without_waiting_for_the_lock(acme: Any) -> None:
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                lock_tenant(acme.pk)
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(30)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")  # a FOR UPDATE lock fails here, at commit
            SshKey.objects.create(
                tenant=acme,
                name="laptop",
                key_type="ssh-ed25519",
                bits=256,
                fingerprint="SHA256:x",
                public_key="ssh-ed25519 AAAA laptop",
                created_by="test",
            )
        assert release.is_set() is False  # committed while the lock was still held
    finally:
        release.set()
        holder.join()
    assert SshKey.objects.filter(tenant=acme).count() == 1
