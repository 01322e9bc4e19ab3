"""Contains all the data models used in inputs/outputs"""

from .access import Access
from .access_urls import AccessUrls
from .actor_type_enum import ActorTypeEnum
from .affected import Affected
from .allocation import Allocation
from .allocation_request_request import AllocationRequestRequest
from .allocation_state_enum import AllocationStateEnum
from .api_key import ApiKey
from .api_key_create_request import ApiKeyCreateRequest
from .api_key_created import ApiKeyCreated
from .api_key_scope_enum import ApiKeyScopeEnum
from .attestation_key_request import AttestationKeyRequest
from .audit_checkpoint import AuditCheckpoint
from .audit_event import AuditEvent
from .audit_key import AuditKey
from .audit_verify import AuditVerify
from .autoscaling_request import AutoscalingRequest
from .blank_enum import BlankEnum
from .budget_request import BudgetRequest
from .budget_standing import BudgetStanding
from .budget_status import BudgetStatus
from .capacity_class_enum import CapacityClassEnum
from .capture_policy import CapturePolicy
from .capture_policy_request import CapturePolicyRequest
from .category_enum import CategoryEnum
from .category_figure import CategoryFigure
from .challenge import Challenge
from .change import Change
from .checkpoint_request import CheckpointRequest
from .closure import Closure
from .closure_step_enum import ClosureStepEnum
from .cluster import Cluster
from .cluster_register_request import ClusterRegisterRequest
from .cold_start import ColdStart
from .cold_start_phases import ColdStartPhases
from .cold_starts import ColdStarts
from .compute_place import ComputePlace
from .cost_basis import CostBasis
from .cost_basis_request_request import CostBasisRequestRequest
from .counts import Counts
from .data_asset import DataAsset
from .data_asset_create_request import DataAssetCreateRequest
from .data_asset_move_request import DataAssetMoveRequest
from .data_asset_state_enum import DataAssetStateEnum
from .data_assets_format_enum import DataAssetsFormatEnum
from .data_place import DataPlace
from .defragment_plan import DefragmentPlan
from .defragment_request_request import DefragmentRequestRequest
from .defragment_run import DefragmentRun
from .defragment_step import DefragmentStep
from .device import Device
from .endpoint_token import EndpointToken
from .endpoint_token_mint_request import EndpointTokenMintRequest
from .endpoint_token_rotation import EndpointTokenRotation
from .env_request import EnvRequest
from .erasure_request import ErasureRequest
from .erasure_request_create_request import ErasureRequestCreateRequest
from .erasure_scope import ErasureScope
from .erasure_state_enum import ErasureStateEnum
from .event import Event
from .evidence_request import EvidenceRequest
from .export_format_enum import ExportFormatEnum
from .export_job import ExportJob
from .export_job_state_enum import ExportJobStateEnum
from .export_request_request import ExportRequestRequest
from .expose_enum import ExposeEnum
from .fabric import Fabric
from .fabric_isolation import FabricIsolation
from .fabric_nic import FabricNic
from .fabric_node import FabricNode
from .fault import Fault
from .finance_exports_signature_retrieve_response_200 import FinanceExportsSignatureRetrieveResponse200
from .finance_margin_retrieve_response_200 import FinanceMarginRetrieveResponse200
from .finance_reconciliation_retrieve_response_200 import FinanceReconciliationRetrieveResponse200
from .finance_reservations_retrieve_response_200 import FinanceReservationsRetrieveResponse200
from .finance_state_enum import FinanceStateEnum
from .fleet_document_request import FleetDocumentRequest
from .fleet_hall_request import FleetHallRequest
from .fleet_load_result import FleetLoadResult
from .fleet_node_request import FleetNodeRequest
from .fleet_region_request import FleetRegionRequest
from .fleet_versions_request import FleetVersionsRequest
from .fragmentation import Fragmentation
from .fragmentation_largest_gang_gpus import FragmentationLargestGangGpus
from .framework_enum import FrameworkEnum
from .gang_request import GangRequest
from .gpu import Gpu
from .gpu_counts import GpuCounts
from .gpu_mode_enum import GpuModeEnum
from .gpu_model_enum import GpuModelEnum
from .hall import Hall
from .health_enum import HealthEnum
from .held_volume import HeldVolume
from .hold_entry import HoldEntry
from .hold_entry_state_enum import HoldEntryStateEnum
from .hold_preview import HoldPreview
from .hold_preview_by_category import HoldPreviewByCategory
from .hold_scope_request import HoldScopeRequest
from .invoice import Invoice
from .invoice_ledger_preview import InvoiceLedgerPreview
from .invoice_ledger_preview_stripe_preview_type_0 import InvoiceLedgerPreviewStripePreviewType0
from .invoice_line import InvoiceLine
from .invoice_preview import InvoicePreview
from .invoice_preview_stripe_preview_type_0 import InvoicePreviewStripePreviewType0
from .isolation import Isolation
from .isolation_request import IsolationRequest
from .legal_hold_create_request import LegalHoldCreateRequest
from .legal_hold_release_request import LegalHoldReleaseRequest
from .link_layer_enum import LinkLayerEnum
from .log_line import LogLine
from .logs import Logs
from .member import Member
from .member_invite_request import MemberInviteRequest
from .metric import Metric
from .metric_devices import MetricDevices
from .metrics import Metrics
from .metrics_device import MetricsDevice
from .metrics_metrics import MetricsMetrics
from .model_source_enum import ModelSourceEnum
from .move import Move
from .move_status_enum import MoveStatusEnum
from .moved_kind_enum import MovedKindEnum
from .node import Node
from .node_action_request import NodeActionRequest
from .node_cpu_tee_enum import NodeCpuTeeEnum
from .node_rdma_type_0 import NodeRdmaType0
from .node_state_enum import NodeStateEnum
from .node_versions import NodeVersions
from .notification import Notification
from .offering import Offering
from .offering_class import OfferingClass
from .offering_class_prices import OfferingClassPrices
from .offering_host import OfferingHost
from .offering_host_prices import OfferingHostPrices
from .offering_mig_profiles import OfferingMigProfiles
from .offering_performance_words import OfferingPerformanceWords
from .offering_prices import OfferingPrices
from .offering_term import OfferingTerm
from .on_preemption_enum import OnPreemptionEnum
from .ops_fleet_drift_retrieve_response_200 import OpsFleetDriftRetrieveResponse200
from .ops_fleet_skew_retrieve_response_200 import OpsFleetSkewRetrieveResponse200
from .ops_fleet_upgrade_plan_retrieve_response_200 import OpsFleetUpgradePlanRetrieveResponse200
from .ops_nodes_diagnosis_retrieve_response_200 import OpsNodesDiagnosisRetrieveResponse200
from .ops_nodes_gpu_errors_retrieve_response_200 import OpsNodesGpuErrorsRetrieveResponse200
from .paginated_allocation_list import PaginatedAllocationList
from .paginated_api_key_list import PaginatedApiKeyList
from .paginated_audit_checkpoint_list import PaginatedAuditCheckpointList
from .paginated_audit_event_list import PaginatedAuditEventList
from .paginated_cluster_list import PaginatedClusterList
from .paginated_cost_basis_list import PaginatedCostBasisList
from .paginated_data_asset_list import PaginatedDataAssetList
from .paginated_defragment_run_list import PaginatedDefragmentRunList
from .paginated_erasure_request_list import PaginatedErasureRequestList
from .paginated_hold_entry_list import PaginatedHoldEntryList
from .paginated_invoice_listed_list import PaginatedInvoiceListedList
from .paginated_member_list import PaginatedMemberList
from .paginated_node_list import PaginatedNodeList
from .paginated_notification_list import PaginatedNotificationList
from .paginated_push_list import PaginatedPushList
from .paginated_region_list import PaginatedRegionList
from .paginated_reservation_list import PaginatedReservationList
from .paginated_run_list import PaginatedRunList
from .paginated_secret_list import PaginatedSecretList
from .paginated_snapshot_list import PaginatedSnapshotList
from .paginated_ssh_key_list import PaginatedSshKeyList
from .paginated_storage_cost_basis_list import PaginatedStorageCostBasisList
from .paginated_volume_list import PaginatedVolumeList
from .patched_member_role_request import PatchedMemberRoleRequest
from .patched_tenant_update_request import PatchedTenantUpdateRequest
from .patched_volume_change_request import PatchedVolumeChangeRequest
from .percentiles import Percentiles
from .port_request import PortRequest
from .preemption import Preemption
from .preservation import Preservation
from .preservation_by_category import PreservationByCategory
from .price import Price
from .price_next_price_type_0 import PriceNextPriceType0
from .problem import Problem
from .problem_errors import ProblemErrors
from .protocol_enum import ProtocolEnum
from .push import Push
from .push_state_enum import PushStateEnum
from .quota import Quota
from .quota_request import QuotaRequest
from .reconcile_result import ReconcileResult
from .reconciliation_state_enum import ReconciliationStateEnum
from .region import Region
from .report_policy import ReportPolicy
from .reservation import Reservation
from .reservation_request_request import ReservationRequestRequest
from .reservation_use import ReservationUse
from .residency import Residency
from .residency_report import ResidencyReport
from .residency_request import ResidencyRequest
from .resolution_enum import ResolutionEnum
from .retention_policy import RetentionPolicy
from .retention_policy_set_request import RetentionPolicySetRequest
from .retention_source_enum import RetentionSourceEnum
from .role_enum import RoleEnum
from .run import Run
from .run_detail import RunDetail
from .run_start_request import RunStartRequest
from .rung_enum import RungEnum
from .scaling_signal_enum import ScalingSignalEnum
from .scope_enum import ScopeEnum
from .sealed import Sealed
from .secret import Secret
from .secret_create_request import SecretCreateRequest
from .secret_exposed_as_enum import SecretExposedAsEnum
from .secret_ref_request import SecretRefRequest
from .secret_value_request import SecretValueRequest
from .share_mode_enum import ShareModeEnum
from .share_request import ShareRequest
from .shred_reason_enum import ShredReasonEnum
from .snapshot import Snapshot
from .snapshot_create_request import SnapshotCreateRequest
from .snapshot_state_enum import SnapshotStateEnum
from .ssh_access import SshAccess
from .ssh_key import SshKey
from .ssh_key_create_request import SshKeyCreateRequest
from .storage_cost_basis import StorageCostBasis
from .storage_cost_basis_request_request import StorageCostBasisRequestRequest
from .storage_kind_enum import StorageKindEnum
from .storage_price import StoragePrice
from .storage_price_next_price_type_0 import StoragePriceNextPriceType0
from .storage_price_request_request import StoragePriceRequestRequest
from .sync import Sync
from .tenant import Tenant
from .tenant_state_enum import TenantStateEnum
from .topology_enum import TopologyEnum
from .usage import Usage
from .usage_granularity_enum import UsageGranularityEnum
from .usage_row import UsageRow
from .verdict import Verdict
from .version_target import VersionTarget
from .version_target_request import VersionTargetRequest
from .volume import Volume
from .volume_create_request import VolumeCreateRequest
from .volume_kind_enum import VolumeKindEnum
from .volume_place import VolumePlace
from .volume_request import VolumeRequest
from .volume_state_enum import VolumeStateEnum
from .withheld import Withheld
from .workload_model_request import WorkloadModelRequest
from .workload_request import WorkloadRequest
from .xid_inject_request import XidInjectRequest

__all__ = (
    "Access",
    "AccessUrls",
    "ActorTypeEnum",
    "Affected",
    "Allocation",
    "AllocationRequestRequest",
    "AllocationStateEnum",
    "ApiKey",
    "ApiKeyCreateRequest",
    "ApiKeyCreated",
    "ApiKeyScopeEnum",
    "AttestationKeyRequest",
    "AuditCheckpoint",
    "AuditEvent",
    "AuditKey",
    "AuditVerify",
    "AutoscalingRequest",
    "BlankEnum",
    "BudgetRequest",
    "BudgetStanding",
    "BudgetStatus",
    "CapacityClassEnum",
    "CapturePolicy",
    "CapturePolicyRequest",
    "CategoryEnum",
    "CategoryFigure",
    "Challenge",
    "Change",
    "CheckpointRequest",
    "Closure",
    "ClosureStepEnum",
    "Cluster",
    "ClusterRegisterRequest",
    "ColdStart",
    "ColdStartPhases",
    "ColdStarts",
    "ComputePlace",
    "CostBasis",
    "CostBasisRequestRequest",
    "Counts",
    "DataAsset",
    "DataAssetCreateRequest",
    "DataAssetMoveRequest",
    "DataAssetStateEnum",
    "DataAssetsFormatEnum",
    "DataPlace",
    "DefragmentPlan",
    "DefragmentRequestRequest",
    "DefragmentRun",
    "DefragmentStep",
    "Device",
    "EndpointToken",
    "EndpointTokenMintRequest",
    "EndpointTokenRotation",
    "EnvRequest",
    "ErasureRequest",
    "ErasureRequestCreateRequest",
    "ErasureScope",
    "ErasureStateEnum",
    "Event",
    "EvidenceRequest",
    "ExportFormatEnum",
    "ExportJob",
    "ExportJobStateEnum",
    "ExportRequestRequest",
    "ExposeEnum",
    "Fabric",
    "FabricIsolation",
    "FabricNic",
    "FabricNode",
    "Fault",
    "FinanceExportsSignatureRetrieveResponse200",
    "FinanceMarginRetrieveResponse200",
    "FinanceReconciliationRetrieveResponse200",
    "FinanceReservationsRetrieveResponse200",
    "FinanceStateEnum",
    "FleetDocumentRequest",
    "FleetHallRequest",
    "FleetLoadResult",
    "FleetNodeRequest",
    "FleetRegionRequest",
    "FleetVersionsRequest",
    "Fragmentation",
    "FragmentationLargestGangGpus",
    "FrameworkEnum",
    "GangRequest",
    "Gpu",
    "GpuCounts",
    "GpuModeEnum",
    "GpuModelEnum",
    "Hall",
    "HealthEnum",
    "HeldVolume",
    "HoldEntry",
    "HoldEntryStateEnum",
    "HoldPreview",
    "HoldPreviewByCategory",
    "HoldScopeRequest",
    "Invoice",
    "InvoiceLedgerPreview",
    "InvoiceLedgerPreviewStripePreviewType0",
    "InvoiceLine",
    "InvoicePreview",
    "InvoicePreviewStripePreviewType0",
    "Isolation",
    "IsolationRequest",
    "LegalHoldCreateRequest",
    "LegalHoldReleaseRequest",
    "LinkLayerEnum",
    "LogLine",
    "Logs",
    "Member",
    "MemberInviteRequest",
    "Metric",
    "MetricDevices",
    "Metrics",
    "MetricsDevice",
    "MetricsMetrics",
    "ModelSourceEnum",
    "Move",
    "MoveStatusEnum",
    "MovedKindEnum",
    "Node",
    "NodeActionRequest",
    "NodeCpuTeeEnum",
    "NodeRdmaType0",
    "NodeStateEnum",
    "NodeVersions",
    "Notification",
    "Offering",
    "OfferingClass",
    "OfferingClassPrices",
    "OfferingHost",
    "OfferingHostPrices",
    "OfferingMigProfiles",
    "OfferingPerformanceWords",
    "OfferingPrices",
    "OfferingTerm",
    "OnPreemptionEnum",
    "OpsFleetDriftRetrieveResponse200",
    "OpsFleetSkewRetrieveResponse200",
    "OpsFleetUpgradePlanRetrieveResponse200",
    "OpsNodesDiagnosisRetrieveResponse200",
    "OpsNodesGpuErrorsRetrieveResponse200",
    "PaginatedAllocationList",
    "PaginatedApiKeyList",
    "PaginatedAuditCheckpointList",
    "PaginatedAuditEventList",
    "PaginatedClusterList",
    "PaginatedCostBasisList",
    "PaginatedDataAssetList",
    "PaginatedDefragmentRunList",
    "PaginatedErasureRequestList",
    "PaginatedHoldEntryList",
    "PaginatedInvoiceListedList",
    "PaginatedMemberList",
    "PaginatedNodeList",
    "PaginatedNotificationList",
    "PaginatedPushList",
    "PaginatedRegionList",
    "PaginatedReservationList",
    "PaginatedRunList",
    "PaginatedSecretList",
    "PaginatedSnapshotList",
    "PaginatedSshKeyList",
    "PaginatedStorageCostBasisList",
    "PaginatedVolumeList",
    "PatchedMemberRoleRequest",
    "PatchedTenantUpdateRequest",
    "PatchedVolumeChangeRequest",
    "Percentiles",
    "PortRequest",
    "Preemption",
    "Preservation",
    "PreservationByCategory",
    "Price",
    "PriceNextPriceType0",
    "Problem",
    "ProblemErrors",
    "ProtocolEnum",
    "Push",
    "PushStateEnum",
    "Quota",
    "QuotaRequest",
    "ReconcileResult",
    "ReconciliationStateEnum",
    "Region",
    "ReportPolicy",
    "Reservation",
    "ReservationRequestRequest",
    "ReservationUse",
    "Residency",
    "ResidencyReport",
    "ResidencyRequest",
    "ResolutionEnum",
    "RetentionPolicy",
    "RetentionPolicySetRequest",
    "RetentionSourceEnum",
    "RoleEnum",
    "Run",
    "RunDetail",
    "RunStartRequest",
    "RungEnum",
    "ScalingSignalEnum",
    "ScopeEnum",
    "Sealed",
    "Secret",
    "SecretCreateRequest",
    "SecretExposedAsEnum",
    "SecretRefRequest",
    "SecretValueRequest",
    "ShareModeEnum",
    "ShareRequest",
    "ShredReasonEnum",
    "Snapshot",
    "SnapshotCreateRequest",
    "SnapshotStateEnum",
    "SshAccess",
    "SshKey",
    "SshKeyCreateRequest",
    "StorageCostBasis",
    "StorageCostBasisRequestRequest",
    "StorageKindEnum",
    "StoragePrice",
    "StoragePriceNextPriceType0",
    "StoragePriceRequestRequest",
    "Sync",
    "Tenant",
    "TenantStateEnum",
    "TopologyEnum",
    "Usage",
    "UsageGranularityEnum",
    "UsageRow",
    "Verdict",
    "VersionTarget",
    "VersionTargetRequest",
    "Volume",
    "VolumeCreateRequest",
    "VolumeKindEnum",
    "VolumePlace",
    "VolumeRequest",
    "VolumeStateEnum",
    "Withheld",
    "WorkloadModelRequest",
    "WorkloadRequest",
    "XidInjectRequest",
)
