"""What the admin may not do: change a model whose changes must go through its services.

A model whose changes are audited (tenants, memberships, billing accounts, invoices, the audit log and the data
lifecycle) is shown in the admin read-only: a save there would skip the service's locks, its checks and its audit
event. Its changes are made where a service makes them (the API, the portal, the staff consoles, the commands);
docs/operations.md ("Security") lists the policy per model.
"""

from typing import Any


class ViewOnly:
    """Neither add, change nor delete: the admin shows the rows; the services write them."""

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False
