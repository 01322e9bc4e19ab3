"""What the product captures from a tenant's running work: serverless payloads, only when the tenant asks.

Captured payloads are ``inference_payload`` data assets like any other (encrypted under the tenant's key, in the
region the endpoint ran in, under retention, holds and erasure). A zero-retention rule for the category wins over
the policy: nothing is persisted then.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from compliance.domain.retention import Category
from compliance.models import CapturePolicy, DataAsset
from compliance.services.assets import data_asset_create, retention_keep_days
from core.actor import Actor
from core.audit import audit_record
from tenancy.locks import lock_tenant
from tenancy.models import Tenant
from tenancy.services import tenant_require_writable

CAPTURE = Actor.system("capture")


def capture_policy(tenant: Tenant) -> CapturePolicy:
    return CapturePolicy.objects.filter(tenant=tenant).first() or CapturePolicy(tenant=tenant)


@transaction.atomic
def capture_policy_set(*, tenant: Tenant, inference_payloads: bool, actor: Actor) -> CapturePolicy:
    tenant_require_writable(lock_tenant(tenant.pk), actor=actor)
    policy, _ = CapturePolicy.objects.update_or_create(
        tenant=tenant, defaults={"inference_payloads": inference_payloads, "updated_at": timezone.now()}
    )
    audit_record(
        actor=actor,
        action="capture_policy.updated",
        target_type="tenant",
        target_id=tenant.pk,
        tenant=tenant,
        data={"inference_payloads": inference_payloads},
    )
    return policy


def kept(tenant: Tenant, category: str) -> bool:
    """Whether the tenant's retention lets the product persist this category at all (not zero retention)."""
    return retention_keep_days([tenant.pk])[tenant.pk][category] is not None


def inference_payload_capture(
    *,
    tenant: Tenant,
    name: str,
    region: str,
    request: bytes,
    response: bytes,
    derived_from: Sequence[int],
    now: datetime,
) -> DataAsset | None:
    """Keep one request and its response when the tenant's policy asks and its retention allows; else None."""
    if not capture_policy(tenant).inference_payloads or not kept(tenant, Category.INFERENCE_PAYLOAD):
        return None
    content = json.dumps(
        {"request": request.decode("utf-8", "replace"), "response": response.decode("utf-8", "replace")}
    ).encode()
    return data_asset_create(
        tenant=tenant,
        name=name,
        category=Category.INFERENCE_PAYLOAD,
        region=region,
        content=content,
        derived_from=derived_from,
        actor=CAPTURE,
        now=now,
    )
