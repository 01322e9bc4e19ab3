"""api_key_authenticate: one plain query finds the key with its user, membership and tenant, as the ORM would."""

from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenancy.models import ApiKey, Membership, Tenant
from tenancy.services import api_key_authenticate, api_key_create, api_key_revoke
from tests.support import SYSTEM


def _fields(instance):
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def test_it_loads_the_key_its_user_membership_and_tenant_in_one_query(alice, acme):
    token = api_key_create(user=alice, name="ci", scopes=["read", "write"], expires_at=None, actor=SYSTEM).token
    with CaptureQueriesContext(connection) as queries:
        key = api_key_authenticate(token)
        assert key is not None
        membership = key.user.membership
        tenant = membership.tenant
    assert len(queries) == 1
    # Every column as the ORM reads it (times, JSON scopes, booleans converted by the same converters).
    assert _fields(key) == _fields(ApiKey.objects.get(pk=key.pk))
    assert _fields(key.user) == _fields(get_user_model().objects.get(pk=alice.pk))
    assert _fields(membership) == _fields(Membership.objects.get(user=alice))
    assert _fields(tenant) == _fields(Tenant.objects.get(pk=acme.pk))
    assert membership.user is key.user


def test_a_staff_key_has_no_membership_and_asks_for_none(operator):
    token = api_key_create(user=operator, name="ops", scopes=["read"], expires_at=None, actor=SYSTEM).token
    key = api_key_authenticate(token)
    assert key is not None
    with CaptureQueriesContext(connection) as queries:
        assert not hasattr(key.user, "membership")
    assert len(queries) == 0


def test_a_revoked_key_is_refused_at_once_and_a_wrong_secret_always(alice):
    made = api_key_create(user=alice, name="ci", scopes=["read"], expires_at=None, actor=SYSTEM)
    assert api_key_authenticate(made.token[:-1] + ("A" if made.token[-1] != "A" else "B")) is None
    assert api_key_authenticate("ldr_nosuchprefix_secret") is None
    assert api_key_authenticate(made.token) is not None
    api_key_revoke(key=made.key, actor=SYSTEM)
    assert api_key_authenticate(made.token) is None  # nothing cached between requests
