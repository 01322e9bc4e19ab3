"""What provisioning announces to the apps above it, without knowing who listens.

Each signal is sent inside the transaction of the change it reports, so a receiver's writes commit or roll back
with it; a receiver that raises undoes the change. Receivers are connected in one place,
``lifecycle/apps.py`` (see docs/architecture.md, "Where apps meet").

- ``allocation_started(allocation, at)``: the allocation entered ``running`` at ``at``.
- ``allocation_stopped(allocation, at)``: the allocation left ``running``; ``at`` is when its billable work ended
  (for a job restarted after a fault, its last checkpoint: the work since is done again).
- ``allocation_scaled(allocation, at)``: a running serverless endpoint's ready replicas changed at ``at``
  (``allocation.replicas`` is the new count): usage is replica-seconds, so its interval is cut there.
- ``allocation_preempted(allocation, preemption)``: spot work was given its notice (an ``AllocationPreemption``):
  it gave its devices up and its usage closed (``allocation_stopped`` was sent at the notice, if it ran).
- ``workload_ended(allocation, logs, checkpoint, at)``: the driver is about to tear the workload down; ``logs`` is
  its whole output (text) and ``checkpoint`` what its last checkpoint left (``{"location", "size_bytes"}``, or
  None). Sent outside any transaction, before the teardown, so what the workload wrote can be kept.
"""

from django.dispatch import Signal

allocation_started = Signal()
allocation_stopped = Signal()
allocation_scaled = Signal()
allocation_preempted = Signal()
workload_ended = Signal()

# Volumes (``provisioning.services.volumes``): provisioned capacity is what is billed, from the moment the backend
# holds it until its deletion begins.
# - ``volume_provisioned(volume, at)``: the backend holds ``volume.size_gb`` from ``at``.
# - ``volume_resized(volume, at)``: a provisioned volume grew to ``volume.size_gb`` at ``at``.
# - ``volume_unprovisioned(volume, at)``: its deletion began at ``at``: no longer billed.
# - ``snapshot_provisioned(snapshot, at)`` / ``snapshot_unprovisioned(snapshot, at)``: the same for a snapshot.
volume_provisioned = Signal()
volume_resized = Signal()
volume_unprovisioned = Signal()
snapshot_provisioned = Signal()
snapshot_unprovisioned = Signal()
