"""Signed download links for a tenant's data assets: how a workload fetches a dataset it mounts.

A link names one asset and the moment it expires, signed with a key derived from ``SECRET_KEY`` (HMAC-SHA256), so
it is a capability for that asset alone, like an object store's presigned URL. It is rendered into the tenant's
own namespace only (a Secret the allocation's init container reads), never shown in an answer or a log. The
content served is decrypted under the tenant's key, so a shredded or shredding asset serves nothing.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta

from django.conf import settings

from compliance.models import DataAsset
from compliance.services.assets import data_asset_content
from core.errors import ServiceError

VALID_FOR = timedelta(days=7)  # a workload restarted within a week fetches again; later renders sign anew


def _signature(asset_id: int, tenant_id: int, expires: int) -> str:
    key = hashlib.sha256(b"ladder-asset-download\0" + settings.SECRET_KEY.encode()).digest()
    return hmac.new(key, f"{asset_id}:{tenant_id}:{expires}".encode(), hashlib.sha256).hexdigest()


def asset_download_url(*, asset: DataAsset, now: datetime) -> str:
    """A link to the asset's content that works until ``now + VALID_FOR``."""
    expires = int((now + VALID_FOR).timestamp())
    signature = _signature(asset.pk, asset.tenant_id, expires)
    return f"{settings.LADDER_PUBLIC_URL}/api/v1/data/downloads/{asset.pk}?expires={expires}&signature={signature}"


def asset_download(*, asset_id: int, expires: str, signature: str, now: datetime) -> bytes:
    """The content behind a signed link; 403 ``download_refused`` for a wrong or expired one (which of the two
    is not said), 404 for an unknown asset, and the asset's own refusals (shredded, no content)."""
    asset = DataAsset.objects.select_related("tenant").filter(pk=asset_id).first()
    if asset is None:
        raise ServiceError("not_found", "Not found.", status=404)
    valid = expires.isdigit() and hmac.compare_digest(_signature(asset.pk, asset.tenant_id, int(expires)), signature)
    if not valid or int(expires) < now.timestamp():
        raise ServiceError("download_refused", "This download link is not valid (wrong or expired).", status=403)
    return data_asset_content(asset=asset)
