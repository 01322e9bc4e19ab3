"""Routes of the REST API (version 1)."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from api import data, finance, legal
from api.allocations import AllocationViewSet, TenantQuotaView
from api.attestation import AttestationChallengeView, AttestationEvidenceView
from api.audit import AuditCheckpointViewSet, AuditEventViewSet, AuditKeyView
from api.billing import (
    BudgetView,
    InvoiceViewSet,
    NotificationViewSet,
    PricesView,
    StoragePriceViewSet,
    UpcomingInvoiceView,
    UsageView,
)
from api.clusters import ClusterViewSet
from api.defragment import DefragmentViewSet, FragmentationViewSet, ReconcileViewSet
from api.exports import ExportJobDownloadView, ExportJobSignatureView, ExportJobView, ExportsView
from api.fleet import (
    FleetDriftView,
    FleetSkewView,
    FleetTargetView,
    FleetUpgradePlanView,
    FleetViewSet,
    NodeViewSet,
    RegionViewSet,
)
from api.gateway import EndpointTokenRotationView, EndpointTokenView
from api.offerings import OfferingsView
from api.reconciliation import PushViewSet, ReconciliationRunViewSet, ReconciliationView
from api.reservations import ReservationViewSet
from api.secrets import SecretViewSet
from api.tenancy import ApiKeyViewSet, MemberViewSet, SshKeyViewSet, TenantView
from api.volumes import SnapshotViewSet, VolumeViewSet

router = SimpleRouter(trailing_slash=False)
router.register("members", MemberViewSet, basename="member")
router.register("api-keys", ApiKeyViewSet, basename="api-key")
router.register("compliance/audit-events", AuditEventViewSet, basename="audit-event")
router.register("compliance/audit-checkpoints", AuditCheckpointViewSet, basename="audit-checkpoint")
router.register("ops/fleet", FleetViewSet, basename="fleet")
router.register("ops/nodes", NodeViewSet, basename="node")
router.register("ops/clusters", ClusterViewSet, basename="cluster")
router.register("regions", RegionViewSet, basename="region")
router.register("allocations", AllocationViewSet, basename="allocation")
router.register("ssh-keys", SshKeyViewSet, basename="ssh-key")
router.register("secrets", SecretViewSet, basename="secret")
router.register("volumes", VolumeViewSet, basename="volume")
router.register("volume-snapshots", SnapshotViewSet, basename="volume-snapshot")
router.register("ops/fragmentation", FragmentationViewSet, basename="fragmentation")
router.register("reservations", ReservationViewSet, basename="reservation")
router.register("ops/defragment", DefragmentViewSet, basename="defragment")
router.register("ops/reconcile", ReconcileViewSet, basename="reconcile")
router.register("ops/storage-prices", StoragePriceViewSet, basename="storage-price")
router.register("invoices", InvoiceViewSet, basename="invoice")
router.register("notifications", NotificationViewSet, basename="notification")
router.register("finance/pushes", PushViewSet, basename="finance-push")
router.register("finance/reconciliation-runs", ReconciliationRunViewSet, basename="finance-reconciliation-run")
data.register(router)
legal.register(router)
finance.register(router)

urlpatterns = [
    path("tenant", TenantView.as_view(), name="tenant"),
    path("offerings", OfferingsView.as_view(), name="offerings"),
    path("prices", PricesView.as_view(), name="prices"),
    path("usage", UsageView.as_view(), name="usage"),
    path("invoices/upcoming", UpcomingInvoiceView.as_view(), name="invoice-upcoming"),
    path("budget", BudgetView.as_view(), name="budget"),
    path("finance/reconciliation", ReconciliationView.as_view(), name="finance-reconciliation"),
    path("compliance/audit-key", AuditKeyView.as_view(), name="audit-key"),
    path("ops/tenants/<slug:slug>/quota", TenantQuotaView.as_view(), name="tenant-quota"),
    path("ops/fleet/target", FleetTargetView.as_view(), name="fleet-target"),
    path("ops/fleet/drift", FleetDriftView.as_view(), name="fleet-drift"),
    path("ops/fleet/skew", FleetSkewView.as_view(), name="fleet-skew"),
    path("ops/fleet/upgrade-plan", FleetUpgradePlanView.as_view(), name="fleet-upgrade-plan"),
    path("finance/exports", ExportsView.as_view(), name="finance-exports"),
    path("finance/exports/<int:pk>", ExportJobView.as_view(), name="finance-export"),
    path("finance/exports/<int:pk>/download", ExportJobDownloadView.as_view(), name="finance-export-download"),
    path("finance/exports/<int:pk>/signature", ExportJobSignatureView.as_view(), name="finance-export-signature"),
    path("endpoint-tokens", EndpointTokenView.as_view(), name="endpoint-tokens"),
    path("endpoint-tokens/rotate", EndpointTokenRotationView.as_view(), name="endpoint-tokens-rotate"),
    path(
        "attestation/<int:allocation_id>/challenge",
        AttestationChallengeView.as_view(),
        name="attestation-challenge",
    ),
    path("attestation/<int:allocation_id>/evidence", AttestationEvidenceView.as_view(), name="attestation-evidence"),
    *data.urlpatterns,
    *legal.urlpatterns,
    path("", include(router.urls)),
]
