"""One registry of staff permissions (``tenancy.domain.roles.StaffPermission``): each staff role is granted exactly what
``STAFF_PERMISSIONS`` lists for it, every name in the registry is a real Django permission, and every staff view of
the API and every console page asks for a name from the registry."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import URLPattern, URLResolver, get_resolver

from portal.consoles.frame import CONSOLES
from tenancy.domain.roles import STAFF_PERMISSIONS, StaffPermission, StaffRole
from tenancy.selectors import staff_may
from tenancy.services import staff_groups_ensure


def dotted(permission: Permission) -> str:
    return f"{permission.content_type.app_label}.{permission.codename}"


@pytest.mark.parametrize("role", list(StaffRole))
def test_each_staff_role_is_granted_exactly_its_registry_permissions(request: Any, role: StaffRole) -> None:
    user = request.getfixturevalue(role.value)  # the finance, compliance and operator fixtures
    group = Group.objects.get(name=role.value)
    granted = {dotted(p) for p in group.permissions.select_related("content_type")}
    assert granted == {p.value for p in STAFF_PERMISSIONS[role]}
    assert user.get_all_permissions() == granted
    for permission in StaffPermission:
        assert staff_may(user, permission) == (permission in STAFF_PERMISSIONS[role]), permission


def test_the_groups_are_put_back_to_the_registry(db: None) -> None:
    """``staff_groups_ensure`` (run after every migration) takes away what the registry no longer grants."""
    group = Group.objects.get(name=StaffRole.FINANCE.value)
    group.permissions.add(Permission.objects.get(content_type__app_label="provisioning", codename="change_node"))
    staff_groups_ensure()
    assert {dotted(p) for p in group.permissions.all()} == {p.value for p in STAFF_PERMISSIONS[StaffRole.FINANCE]}


def test_every_registry_name_is_a_django_permission_some_role_holds(db: None) -> None:
    known = {dotted(p) for p in Permission.objects.select_related("content_type")}
    assert {p.value for p in StaffPermission} <= known
    held = {p for perms in STAFF_PERMISSIONS.values() for p in perms}
    assert set(StaffPermission) == held


def test_staff_may_is_for_active_staff_only(finance: Any, alice: Any) -> None:
    assert staff_may(finance, StaffPermission.USAGE_VIEW)
    assert not staff_may(alice, StaffPermission.USAGE_VIEW)
    finance.is_active = False
    assert not staff_may(finance, StaffPermission.USAGE_VIEW)


def _views(resolver: URLResolver) -> list[Any]:
    found = []
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            found += _views(pattern)
        elif isinstance(pattern, URLPattern):
            view = getattr(pattern.callback, "cls", None)
            if view is not None:
                found.append(view)
    return found


def test_every_staff_view_of_the_api_names_its_permission_from_the_registry() -> None:
    named: list[tuple[str, Any]] = []
    for view in set(_views(get_resolver())):
        for attr in ("required_permission", "read_permission", "write_permission", "executing_permission"):
            if hasattr(view, attr):
                named.append((f"{view.__name__}.{attr}", getattr(view, attr)))
        for action, permission in getattr(view, "action_permissions", {}).items():
            named.append((f"{view.__name__}.action_permissions[{action}]", permission))
    assert len(named) > 20
    assert [name for name, permission in named if not isinstance(permission, StaffPermission)] == []


def test_every_console_and_page_names_its_permission_from_the_registry() -> None:
    assert {c.name for c in CONSOLES.values()} == {"compliance", "operators", "finance"}
    for console in CONSOLES.values():
        assert isinstance(console.permission, StaffPermission), console.name
        assert all(isinstance(page.permission, StaffPermission) for page in console.pages), console.name
