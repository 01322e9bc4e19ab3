"""Who may do what: tenant roles, staff roles and the one table that maps actions to roles.

Pure Python so the rules are read in one place; the API's permission classes and the services both ask here.
"""

from enum import StrEnum


class TenantRole(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    VIEWER = "viewer"
    BILLING = "billing"


class StaffRole(StrEnum):
    """Staff belong to no tenant; each role is a Django group with explicit permissions."""

    FINANCE = "finance"
    COMPLIANCE = "compliance"
    OPERATOR = "operator"


class StaffPermission(StrEnum):
    """Every staff capability, named once: the value is the Django permission (``app_label.codename``) that grants
    it. The API's staff views, the consoles' pages and the staff groups all read these names; none spells a
    permission string of its own."""

    TENANT_VIEW = "tenancy.view_tenant"
    TENANT_QUOTA_SET = "tenancy.change_tenant"  # a tenant's GPU quota
    # finance
    USAGE_VIEW = "billing.view_usagerollup"  # usage, revenue and margin, budgets, exports, refused pushes
    PUSH_RETRY = "billing.change_usagerollup"  # retry a push Stripe refused (the outbox row only, never tenant data)
    INVOICE_VIEW = "billing.view_invoice"  # invoices, reconciliation
    RECONCILIATION_VIEW = "billing.view_reconciliationrun"
    RECONCILIATION_START = "billing.add_reconciliationrun"  # start a month's reconciliation (it only reads)
    SKU_VIEW = "billing.view_sku"
    PRICE_SET = "billing.add_skuprice"  # the price book
    COST_BASIS_VIEW = "billing.view_costbasis"  # the cost basis per GPU-hour of each model and hall
    COST_BASIS_ADD = "billing.add_costbasis"
    # compliance
    AUDIT_VIEW = "core.view_auditevent"
    AUDIT_VERIFY = "core.verify_auditchain"  # verify the chain, sign a checkpoint
    HOLD_VIEW = "compliance.view_legalhold"  # the hold register, previews
    HOLD_PLACE = "compliance.add_legalhold"
    HOLD_RELEASE = "compliance.change_legalhold"
    DATA_ASSET_VIEW = "compliance.view_dataasset"  # residency reports
    ERASURE_VIEW = "compliance.view_erasurerequest"
    ERASURE_REQUEST = "compliance.add_erasurerequest"  # on behalf of a data subject
    # operators
    NODE_VIEW = "provisioning.view_node"  # the fleet, nodes, fragmentation, skew
    NODE_CHANGE = "provisioning.change_node"  # drain, undrain, quarantine, fail; reconcile; carry out a plan
    FLEET_LOAD = "provisioning.add_node"  # load a fleet document, sync a cluster's nodes
    CLUSTER_VIEW = "provisioning.view_cluster"  # Kubernetes clusters: register, test
    CLUSTER_ADD = "provisioning.add_cluster"
    CLUSTER_CHANGE = "provisioning.change_cluster"
    RESERVATION_VIEW = "provisioning.view_reservation"  # tenants' reservations and their use
    RESERVATION_ADD = "provisioning.add_reservation"
    RESERVATION_CHANGE = "provisioning.change_reservation"  # end one early


_P = StaffPermission

# What each staff group is granted: exactly these (``tenancy.services.staff_groups_ensure``).
STAFF_PERMISSIONS: dict[StaffRole, tuple[StaffPermission, ...]] = {
    StaffRole.FINANCE: (
        _P.TENANT_VIEW,
        _P.USAGE_VIEW,
        _P.INVOICE_VIEW,
        _P.SKU_VIEW,
        _P.PUSH_RETRY,
        _P.RECONCILIATION_VIEW,
        _P.RECONCILIATION_START,
        _P.COST_BASIS_VIEW,  # revenue and margin
        _P.RESERVATION_VIEW,  # the revenue reservations lock in
    ),
    StaffRole.COMPLIANCE: (
        _P.TENANT_VIEW,
        _P.AUDIT_VIEW,
        _P.AUDIT_VERIFY,
        _P.HOLD_VIEW,
        _P.HOLD_PLACE,
        _P.HOLD_RELEASE,
        _P.DATA_ASSET_VIEW,
        _P.ERASURE_VIEW,
        _P.ERASURE_REQUEST,
    ),
    StaffRole.OPERATOR: (
        _P.TENANT_VIEW,
        _P.NODE_VIEW,
        _P.NODE_CHANGE,
        _P.FLEET_LOAD,
        _P.TENANT_QUOTA_SET,
        _P.CLUSTER_VIEW,
        _P.CLUSTER_ADD,
        _P.CLUSTER_CHANGE,
        _P.SKU_VIEW,
        _P.PRICE_SET,
        _P.COST_BASIS_VIEW,
        _P.COST_BASIS_ADD,
        _P.RESERVATION_VIEW,
        _P.RESERVATION_ADD,
        _P.RESERVATION_CHANGE,
    ),
}


class Action(StrEnum):
    TENANT_VIEW = "tenant.view"
    TENANT_UPDATE = "tenant.update"
    MEMBER_VIEW = "member.view"
    MEMBER_MANAGE = "member.manage"
    API_KEY_MANAGE_OWN = "api_key.manage_own"
    API_KEY_MANAGE_ANY = "api_key.manage_any"
    API_KEY_WRITE_SCOPE = "api_key.write_scope"
    ALLOCATION_VIEW = "allocation.view"
    ALLOCATION_MANAGE = "allocation.manage"
    RESERVATION_ORDER = "reservation.order"
    BILLING_VIEW = "billing.view"
    BUDGET_MANAGE = "budget.manage"
    DATA_VIEW = "data.view"
    DATA_MANAGE = "data.manage"
    RETENTION_MANAGE = "retention.manage"
    ERASURE_REQUEST = "erasure.request"
    TENANT_CLOSE = "tenant.close"
    SSH_KEY_VIEW = "ssh_key.view"
    SSH_KEY_MANAGE = "ssh_key.manage"
    SECRET_VIEW = "secret.view"  # noqa: S105 - an action name, not a password
    SECRET_MANAGE = "secret.manage"  # noqa: S105 - an action name, not a password


_EVERYONE = frozenset(TenantRole)
_ADMINS = frozenset({TenantRole.OWNER, TenantRole.ADMIN})

ALLOWED: dict[Action, frozenset[TenantRole]] = {
    Action.TENANT_VIEW: _EVERYONE,
    Action.TENANT_UPDATE: _ADMINS,
    Action.MEMBER_VIEW: _EVERYONE,
    Action.MEMBER_MANAGE: _ADMINS,
    Action.API_KEY_MANAGE_OWN: _EVERYONE,
    Action.API_KEY_MANAGE_ANY: _ADMINS,
    # Viewers and billing users may hold read-only keys only.
    Action.API_KEY_WRITE_SCOPE: frozenset({TenantRole.OWNER, TenantRole.ADMIN, TenantRole.MEMBER}),
    Action.ALLOCATION_VIEW: _EVERYONE,
    # Buying capacity spends money: not for viewers or billing users.
    Action.ALLOCATION_MANAGE: frozenset({TenantRole.OWNER, TenantRole.ADMIN, TenantRole.MEMBER}),
    # A reservation commits the tenant to months of spend: its owners and admins order one.
    Action.RESERVATION_ORDER: _ADMINS,
    Action.BILLING_VIEW: _EVERYONE,
    Action.BUDGET_MANAGE: _ADMINS,
    Action.DATA_VIEW: _EVERYONE,
    # Registering, moving and deleting data: the people who run work, not viewers or billing users.
    Action.DATA_MANAGE: frozenset({TenantRole.OWNER, TenantRole.ADMIN, TenantRole.MEMBER}),
    # Decisions about the tenant's data posture and its departure are the owner's.
    Action.RETENTION_MANAGE: frozenset({TenantRole.OWNER}),
    Action.ERASURE_REQUEST: frozenset({TenantRole.OWNER}),
    Action.TENANT_CLOSE: frozenset({TenantRole.OWNER}),
    Action.SSH_KEY_VIEW: _EVERYONE,
    # Keys open the tenant's machines: registered by the people who run work on them.
    Action.SSH_KEY_MANAGE: frozenset({TenantRole.OWNER, TenantRole.ADMIN, TenantRole.MEMBER}),
    # Names and versions only: no one reads a value back.
    Action.SECRET_VIEW: _EVERYONE,
    Action.SECRET_MANAGE: frozenset({TenantRole.OWNER, TenantRole.ADMIN, TenantRole.MEMBER}),
}


def role_allows(role: str | None, action: Action) -> bool:
    return role is not None and role in ALLOWED[action]


def may_assign_role(actor_role: str, new_role: str, current_role: str | None = None) -> bool:
    """Admins manage members, but only an owner may make or unmake an owner."""
    if actor_role not in _ADMINS:
        return False
    touches_owner = TenantRole.OWNER in (new_role, current_role)
    return actor_role == TenantRole.OWNER or not touches_owner
