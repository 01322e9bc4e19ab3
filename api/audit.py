"""Compliance officers' view of the audit log: ``/api/v1/compliance/audit-events`` and its verification."""

from __future__ import annotations

from typing import Any

import django_filters
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import StaffViewSet
from compliance.models import AuditEvent
from compliance.selectors import audit_chain_verify
from tenancy.models import Tenant


class AuditEventSerializer(serializers.ModelSerializer[AuditEvent]):
    tenant: serializers.SlugRelatedField[Tenant] = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = AuditEvent
        fields = [
            "seq", "at", "actor_type", "actor_id", "actor_label", "api_key_prefix", "tenant", "action",
            "target_type", "target_id", "data", "prev_hash", "hash",
        ]  # fmt: skip
        read_only_fields = fields


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

    class Meta:
        model = AuditEvent
        fields: list[str] = []


class AuditEventViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, StaffViewSet):
    queryset = AuditEvent.objects.select_related("tenant")
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilter
    required_permission = "compliance.view_auditevent"
    cursor_ordering = "-pk"  # newest first

    @extend_schema(responses=AuditVerifySerializer, filters=False)
    @action(detail=False, methods=["get"], filterset_class=None, pagination_class=None)
    def verify(self, request: Request) -> Response:
        """Walk the whole chain and report the first bad event, if any."""
        if not request.user.has_perm("compliance.verify_auditchain"):
            self.permission_denied(request)
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
