"""What tenancy announces to the apps above it, without knowing who listens (connected in ``lifecycle/receivers.py``).

- ``tenant_limits_set(tenant)``: operators set the tenant's limits (``tenant_set_quota``), inside its transaction.
"""

from django.dispatch import Signal

tenant_limits_set = Signal()
