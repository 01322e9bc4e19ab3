"""Endpoint tokens at the API: minted with an API key for some or all of the tenant's endpoints, verifiable with
nothing but the tenant's public JWKS, refused with a stable code when asked for wrongly; the per-request check takes
them as it takes API keys, refuses them for another endpoint, another tenant, after expiry, after their key is
revoked or their signing key rotated; and for a running endpoint it answers from cache without touching the
database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from provisioning.drivers.base import allocations_reconcile, provisioner
from provisioning.models import Allocation
from tenancy.domain.endpoint_tokens import signing_key, token_verify
from tenancy.services import api_key_create
from tests.support import SYSTEM, assert_problem
from tests.support.billing import load_fleet, place

TOKENS = "/api/v1/endpoint-tokens"
GATEWAY = "/api/v1/gateway/authorize"


@pytest.fixture(autouse=True)
def fresh_cache(settings: Any) -> None:
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    cache.clear()


def endpoint(tenant: Any) -> Allocation:
    allocation = place(tenant, rung="serverless", gpus=1)
    provisioner().provision(allocation.pk)
    allocations_reconcile()
    allocation.refresh_from_db()
    return allocation


def keyed(user: Any, *scopes: str) -> tuple[APIClient, str]:
    issued = api_key_create(user=user, name="k", scopes=list(scopes or ("read",)), expires_at=None, actor=SYSTEM)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.token}")
    return client, issued.token


def check(allocation: Allocation, credential: str) -> Any:
    return APIClient().get(
        GATEWAY,
        HTTP_X_FORWARDED_HOST=f"ldr-{allocation.pk}.ladder.localhost",
        HTTP_AUTHORIZATION=f"Bearer {credential}",
    )


def test_a_token_is_minted_with_a_read_only_key_and_verifies_with_the_public_jwks(acme: Any, alice: Any) -> None:
    load_fleet()
    mine = endpoint(acme)
    client, _ = keyed(alice)  # read-only: a token may only call endpoints, as the key may
    answer = client.post(TOKENS, {"endpoints": [mine.pk], "ttl_seconds": 600}, format="json")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["token_type"] == "Bearer"
    assert body["endpoints"] == [mine.pk]
    assert body["audiences"] == [f"ldr-{mine.pk}.ladder.localhost"]
    assert body["kid"] == "acme.1"

    jwks = APIClient().get("/api/v1/gateway/jwks/acme")
    assert jwks.status_code == 200
    assert jwks["Content-Type"] == "application/jwk-set+json"
    assert jwks["Cache-Control"] == "public, max-age=30"
    keys = {k["kid"]: k for k in jwks.json()["keys"]}
    assert set(keys) == {"acme.1", "acme.2"}  # the one signing now, and the next, published ahead
    public = jwt.PyJWK(keys["acme.1"]).key
    claims = jwt.decode(body["token"], public, algorithms=["ES256"], audience=body["audiences"])
    assert claims["ladder_tenant"] == "acme"
    assert claims["iss"] == "http://127.0.0.1:8000"
    assert claims["exp"] - claims["iat"] == 600
    assert "ldr_" not in jwt.get_unverified_header(body["token"])["kid"]  # no key material in the header


def test_tokens_are_refused_when_asked_for_wrongly(
    acme: Any, alice: Any, charlie: Any, globex: Any, settings: Any
) -> None:
    load_fleet()
    theirs = endpoint(globex)
    client, _ = keyed(alice)
    refused = client.post(TOKENS, {"endpoints": [theirs.pk]}, format="json")
    assert_problem(refused, 422, "validation_error")
    assert "endpoints.0" in refused.json()["errors"]
    assert_problem(client.post(TOKENS, {"endpoints": [424242]}, format="json"), 422, "validation_error")
    assert_problem(client.post(TOKENS, {"ttl_seconds": 59}, format="json"), 422, "validation_error")
    too_long = client.post(TOKENS, {"ttl_seconds": settings.LADDER_ENDPOINT_TOKEN_MAX_TTL_SECONDS + 1}, format="json")
    assert_problem(too_long, 422, "validation_error")
    assert_problem(client.post(TOKENS, {"endpoints": []}, format="json"), 422, "validation_error")
    assert_problem(client.post(TOKENS, {"audience": "x"}, format="json"), 422, "validation_error")

    session = APIClient()
    session.force_authenticate(alice)
    assert_problem(session.post(TOKENS, {}, format="json"), 403, "api_key_required")
    assert_problem(APIClient().post(TOKENS, {}, format="json"), 401, "not_authenticated")


def test_a_token_never_outlives_its_key(acme: Any, alice: Any) -> None:
    expires = datetime.now(UTC) + timedelta(minutes=5)
    issued = api_key_create(user=alice, name="short", scopes=["read"], expires_at=expires, actor=SYSTEM)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.token}")
    body = client.post(TOKENS, {"ttl_seconds": 3600}, format="json").json()
    assert datetime.fromisoformat(body["expires_at"]) <= expires
    assert body["endpoints"] is None
    assert body["audiences"] == ["endpoints.acme.ladder.localhost"]


def test_the_check_takes_a_token_for_its_endpoint_only(
    acme: Any, alice: Any, globex: Any, charlie: Any, time_machine: Any
) -> None:
    load_fleet()
    mine, other, theirs = endpoint(acme), endpoint(acme), endpoint(globex)
    client, _ = keyed(alice, "read", "write")
    token = client.post(TOKENS, {"endpoints": [mine.pk]}, format="json").json()["token"]
    everywhere = client.post(TOKENS, {}, format="json").json()["token"]
    assert check(mine, token).status_code == 200
    assert check(other, everywhere).status_code == 200
    assert_problem(check(other, token), 401, "not_authenticated")  # minted for another endpoint
    assert_problem(check(theirs, everywhere), 403, "endpoint_forbidden")  # another tenant's endpoint
    foreign_client, _ = keyed(charlie)
    foreign = foreign_client.post(TOKENS, {}, format="json").json()["token"]
    assert_problem(check(mine, foreign), 403, "endpoint_forbidden")  # globex's, for globex's endpoints only

    forged = jwt.encode(
        {"iss": "http://127.0.0.1:8000", "aud": "endpoints.acme.ladder.localhost", "exp": 2**31, "iat": 0},
        signing_key(b"not ladder's secret", "acme", 1),
        algorithm="ES256",
        headers={"kid": "acme.1"},
    )
    assert_problem(check(mine, forged), 401, "not_authenticated")

    time_machine.move_to(datetime.now(UTC) + timedelta(hours=2))
    expired = check(mine, token)
    assert_problem(expired, 401, "not_authenticated")
    assert "expired" in expired.json()["detail"]


def test_revoking_the_key_or_rotating_refuses_its_tokens_at_once_at_ladders_check(
    acme: Any, alice: Any, bob: Any
) -> None:
    load_fleet()
    mine = endpoint(acme)
    client, _ = keyed(alice, "read", "write")
    spare_client, _ = keyed(alice)
    token = client.post(TOKENS, {}, format="json").json()["token"]
    spare = spare_client.post(TOKENS, {}, format="json").json()["token"]
    key_id = client.get("/api/v1/api-keys").json()["results"][0]["id"]
    assert client.delete(f"/api/v1/api-keys/{key_id}").status_code == 204
    assert_problem(check(mine, token), 401, "not_authenticated")
    # Its signing key rotated with it: the other key's token signed by the old key is refused too; a new one passes.
    assert_problem(check(mine, spare), 401, "not_authenticated")
    fresh = spare_client.post(TOKENS, {}, format="json")
    assert fresh.json()["kid"] == "acme.2"
    assert check(mine, fresh.json()["token"]).status_code == 200

    members_client, _ = keyed(bob, "read", "write")
    assert_problem(members_client.post(f"{TOKENS}/rotate", {}, format="json"), 403, "permission_denied")
    owners_client, _ = keyed(alice, "read", "write")
    rotated = owners_client.post(f"{TOKENS}/rotate", {}, format="json")
    assert rotated.json() == {"generation": 3, "refused_within_seconds": 30}
    assert_problem(check(mine, fresh.json()["token"]), 401, "not_authenticated")
    assert {k["kid"] for k in APIClient().get("/api/v1/gateway/jwks/acme").json()["keys"]} == {"acme.3", "acme.4"}


def test_a_running_endpoints_check_reads_no_database(acme: Any, alice: Any) -> None:
    load_fleet()
    mine = endpoint(acme)
    client, key = keyed(alice)
    token = client.post(TOKENS, {}, format="json").json()["token"]
    for credential in (key, token):
        assert check(mine, credential).status_code == 200  # warms the cache
        with CaptureQueriesContext(connection) as queries:
            for _ in range(20):
                assert check(mine, credential).status_code == 200
        assert len(queries) == 0, [q["sql"] for q in queries]


def test_the_jwks_of_no_tenant_is_a_problem(db: None) -> None:
    assert_problem(APIClient().get("/api/v1/gateway/jwks/nobody"), 404, "not_found")


def test_token_verification_is_the_gateways(acme: Any) -> None:
    """The domain's own check: the same rules as the gateway's JWT filter."""
    from tenancy.domain.endpoint_tokens import TokenClaims, TokenRefused, token_sign

    key = signing_key(b"secret", "acme", 7)
    claims = TokenClaims("https://ladder", "acme", "abc", ("a.example",), 7, 1000, 2000, "j")
    token = token_sign(key, claims)
    assert jwt.get_unverified_header(token)["kid"] == "acme.7"
    assert token_verify(token, key.public_key(), issuer="https://ladder", audience="a.example", now=1500)["sub"] == (
        "ldr_abc"
    )
    for issuer, audience, now in (("https://other", "a.example", 1500), ("https://ladder", "b", 1500)):
        with pytest.raises(TokenRefused):
            token_verify(token, key.public_key(), issuer=issuer, audience=audience, now=now)
    with pytest.raises(TokenRefused, match="expired"):
        token_verify(token, key.public_key(), issuer="https://ladder", audience="a.example", now=2000)
    with pytest.raises(TokenRefused, match="not valid yet"):
        token_verify(token, key.public_key(), issuer="https://ladder", audience="a.example", now=999)
    assert signing_key(b"secret", "acme", 7).private_numbers() == key.private_numbers()  # derived, not stored
    assert signing_key(b"secret", "acme", 8).private_numbers() != key.private_numbers()
