"""Compliance officers' view of the audit log: ``/api/v1/compliance/audit-events`` and its verification, the
signed checkpoints of its chain (``/audit-checkpoints``) and the public key that verifies them (``/audit-key``)."""

from __future__ import annotations

from typing import Any, ClassVar

import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import LadderView, StaffViewSet
from api.problems import Problem
from api.serializers import refuse_body
from compliance.models import AuditCheckpoint
from compliance.selectors import audit_chain_verify, audit_checkpoint_latest, changes_of
from compliance.services.audit import audit_checkpoint_take
from compliance.signing import audit_signer
from core.models import AuditEvent
from tenancy.domain.roles import StaffPermission
from tenancy.models import Tenant


class ChangeSerializer(serializers.Serializer[Any]):
    field = serializers.CharField()
    old = serializers.JSONField(allow_null=True)
    new = serializers.JSONField(allow_null=True)


class AuditEventSerializer(serializers.ModelSerializer[AuditEvent]):
    tenant: serializers.SlugRelatedField[Tenant] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    changes = serializers.SerializerMethodField(
        help_text="What changed, from `data`: `{field, old, new}` per updated field or state transition."
    )

    class Meta:
        model = AuditEvent
        fields = [
            "seq",
            "at",
            "actor_type",
            "actor_id",
            "actor_label",
            "api_key_prefix",
            "tenant",
            "action",
            "target_type",
            "target_id",
            "data",
            "changes",
            "prev_hash",
            "hash",
        ]
        read_only_fields = fields

    @extend_schema_field(ChangeSerializer(many=True))
    def get_changes(self, event: AuditEvent) -> list[dict[str, Any]]:
        return changes_of(event.data)


class AuditVerifySerializer(serializers.Serializer[Any]):
    ok = serializers.BooleanField()
    count = serializers.IntegerField(help_text="Events verified before the first bad one (all, when ok).")
    bad_seq = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class AuditEventFilter(django_filters.FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug", help_text="Tenant slug.")
    actor = django_filters.CharFilter(field_name="actor_label", help_text="Username of the actor.")
    action = django_filters.CharFilter(
        field_name="action", lookup_expr="startswith", help_text="Action prefix, e.g. `api_key.` or `tenant.created`."
    )
    # ``from`` is a Python keyword, so the filter is placed into the class namespace by name.
    locals()["from"] = django_filters.IsoDateTimeFilter(
        field_name="at", lookup_expr="gte", help_text="Events at or after this time (ISO-8601)."
    )
    to = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="lt", help_text="Events before this time.")
    target = django_filters.CharFilter(
        method="filter_target",
        help_text="What the event is about: a type (`allocation`) or a type and id (`allocation:42`).",
    )

    class Meta:
        model = AuditEvent
        fields: list[str] = []

    def filter_target(self, queryset: QuerySet[AuditEvent], name: str, value: str) -> QuerySet[AuditEvent]:
        target_type, _, target_id = value.partition(":")
        queryset = queryset.filter(target_type=target_type)
        return queryset.filter(target_id=target_id) if target_id else queryset


class AuditEventViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, StaffViewSet):
    queryset = AuditEvent.objects.select_related("tenant")
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilter
    required_permission = StaffPermission.AUDIT_VIEW
    action_permissions: ClassVar[dict[str, StaffPermission]] = {"verify": StaffPermission.AUDIT_VERIFY}
    cursor_ordering = "-pk"  # newest first

    @extend_schema(responses=AuditVerifySerializer, filters=False)
    @action(detail=False, methods=["get"], filterset_class=None, pagination_class=None)
    def verify(self, request: Request) -> Response:
        """Walk the whole chain and report the first bad event, if any."""
        result = audit_chain_verify()
        return Response(
            {
                "ok": result.ok,
                "count": result.count,
                "bad_seq": result.bad_seq,
                "reason": result.reason,
                "message": result.describe(),
            }
        )


# --- signed checkpoints and the key ------------------------------------------------------------------------------


class AuditCheckpointSerializer(serializers.ModelSerializer[AuditCheckpoint]):
    class Meta:
        model = AuditCheckpoint
        fields = ["seq", "hash", "at", "key_id", "signature"]
        read_only_fields = fields


class AuditCheckpointViewSet(mixins.ListModelMixin, StaffViewSet):
    """Signed checkpoints of the audit chain, newest first; POST takes one now."""

    queryset = AuditCheckpoint.objects.all()
    serializer_class = AuditCheckpointSerializer
    required_permission = StaffPermission.AUDIT_VIEW
    action_permissions: ClassVar[dict[str, StaffPermission]] = {"create": StaffPermission.AUDIT_VERIFY}
    cursor_ordering = "-seq"

    @extend_schema(
        request=None,
        responses={
            201: AuditCheckpointSerializer,
            200: AuditCheckpointSerializer,
        },
        description=(
            "Sign the chain head now: 201 with the new checkpoint, or 200 with the latest one when the head has "
            "not moved since. Taking one appends one `audit.checkpoint` event, which the checkpoint covers."
        ),
    )
    def create(self, request: Request) -> Response:
        refuse_body(request)
        before = audit_checkpoint_latest()
        checkpoint = audit_checkpoint_take(actor=self.caller.actor)
        if checkpoint is None:
            raise Problem(409, "audit_log_empty", "The audit log holds no event yet; there is nothing to sign.")
        created = before is None or checkpoint.pk != before.pk
        return Response(
            AuditCheckpointSerializer(checkpoint).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class AuditKeySerializer(serializers.Serializer[Any]):
    algorithm = serializers.CharField()
    key_id = serializers.CharField(help_text="First 16 hex digits of SHA-256 over the raw public key.")
    public_key = serializers.CharField(help_text="PEM (SubjectPublicKeyInfo).")


class AuditKeyView(LadderView):
    """The public key that verifies audit checkpoints and exported bundles. Public: it is a public key, and
    whoever checks a bundle (an outside auditor, a tenant) needs it without a Ladder account."""

    base_permissions: ClassVar[list[type]] = [AllowAny]
    authentication_classes = ()

    @extend_schema(responses=AuditKeySerializer)
    def get(self, request: Request) -> Response:
        signer = audit_signer()
        return Response({"algorithm": "Ed25519", "key_id": signer.key_id, "public_key": signer.public_key_pem})
