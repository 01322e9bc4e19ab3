"""Finance's FOCUS exports (docs/finance.md, "Exports"), for staff holding ``billing.view_usagerollup``.

- ``GET /finance/exports?from=&to=&tenant=&detail=&format=`` streams a small range (at most
  ``LADDER_EXPORT_INLINE_MAX_DAYS`` days for one tenant, ``LADDER_EXPORT_INLINE_MAX_DAYS_ALL_TENANTS`` for all),
  signed: the signature file's JSON, base64url, in the ``Ladder-Export-Signature`` header. A larger range answers
  413 ``export_too_large``: a GET never writes, so a job is started by a POST.
- ``POST /finance/exports`` (body: from, to, tenant, detail, format) records an export job (audited) and answers
  202; ``GET /finance/exports/{id}`` shows it, ``/download`` and ``/signature`` serve it once done.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from api.base import LadderView
from api.permissions import HasStaffPermission
from api.problems import Problem
from api.serializers import StrictSerializer
from billing.models import ExportJob, ExportState
from compliance.domain.verify_export import signature_header
from lifecycle.services.exports import ExportSpec, export_job_request, export_spec, export_write
from tenancy.domain.roles import StaffPermission

PERMISSION = StaffPermission.USAGE_VIEW
SIGNATURE_HEADER = "Ladder-Export-Signature"
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet"}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"", "0", "false", "no", "off"}


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise Problem(422, "validation_error", f"{name}: not a boolean.", errors={name: ["Not a boolean."]})


def _spec(params: Any) -> ExportSpec:
    missing = [name for name in ("from", "to") if not params.get(name)]
    if missing:
        raise Problem(
            422,
            "validation_error",
            f"{missing[0]}: This field is required.",
            errors={name: ["This field is required."] for name in missing},
        )
    return export_spec(
        date_from=str(params["from"]),
        date_to=str(params["to"]),
        tenant=params.get("tenant") or None,
        detail=_flag(params.get("detail", False), "detail"),
        file_format=str(params.get("format") or "csv"),
    )


class ExportRequestSerializer(StrictSerializer):
    to = serializers.CharField(help_text="Last UTC day, YYYY-MM-DD (inclusive).")
    tenant = serializers.CharField(required=False, allow_blank=True, allow_null=True, help_text="A tenant's slug.")
    detail = serializers.BooleanField(required=False, default=False)
    format = serializers.ChoiceField(choices=["csv", "parquet"], required=False, default="csv")

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        fields["from"] = serializers.CharField(help_text="First UTC day, YYYY-MM-DD.")  # a keyword in Python
        return fields


class ExportJobSerializer(serializers.ModelSerializer[ExportJob]):
    tenant: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    format = serializers.CharField(source="file_format")
    download = serializers.SerializerMethodField()
    signature = serializers.SerializerMethodField()

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "state",
            "date_from",
            "date_to",
            "tenant",
            "detail",
            "format",
            "requested_by",
            "created_at",
            "finished_at",
            "rows",
            "sha256",
            "error",
            "download",
            "signature",
        ]
        read_only_fields = fields

    def get_download(self, job: ExportJob) -> str | None:
        return f"/api/v1/finance/exports/{job.pk}/download" if job.state == ExportState.DONE else None

    def get_signature(self, job: ExportJob) -> str | None:
        return f"/api/v1/finance/exports/{job.pk}/signature" if job.state == ExportState.DONE else None


_PARAMETERS = [
    OpenApiParameter("from", OpenApiTypes.DATE, required=True, description="First UTC day."),
    OpenApiParameter("to", OpenApiTypes.DATE, required=True, description="Last UTC day (inclusive)."),
    OpenApiParameter("tenant", str, description="A tenant's slug; all tenants without it."),
    OpenApiParameter("detail", bool, description="One row per allocation x SKU x hour, with tags."),
    OpenApiParameter("format", str, enum=["csv", "parquet"], description="Default csv."),
]
_FILE = OpenApiResponse(OpenApiTypes.BINARY, description="The export; its signature in Ladder-Export-Signature.")


class _Settings:
    """DRF's settings, less ``?format=`` choosing a renderer: here ``format`` is the export's file format."""

    URL_FORMAT_OVERRIDE = None

    def __getattr__(self, name: str) -> Any:
        return getattr(api_settings, name)


class ExportNegotiation(DefaultContentNegotiation):
    settings = _Settings()  # type: ignore[assignment]


class FinanceView(LadderView):
    content_negotiation_class = ExportNegotiation
    extra_permissions: ClassVar[list[type]] = [HasStaffPermission]
    required_permission: ClassVar[StaffPermission] = PERMISSION

    def get_required_permission(self) -> StaffPermission:
        return self.required_permission


def _file_response(path: Path, signature: dict[str, Any], name: str, file_format: str) -> FileResponse:
    response = FileResponse(path.open("rb"), as_attachment=True, filename=name, content_type=CONTENT_TYPES[file_format])
    response[SIGNATURE_HEADER] = signature_header(signature)
    return response


class ExportsView(FinanceView):
    @extend_schema(
        operation_id="finance_exports_stream",
        parameters=_PARAMETERS,
        responses={
            (200, "text/csv"): _FILE,
            (200, "application/vnd.apache.parquet"): _FILE,
            413: OpenApiResponse(description="`export_too_large`: POST the same parameters to run an export job."),
            422: OpenApiResponse(description="`validation_error` naming the parameter."),
        },
    )
    def get(self, request: Request) -> FileResponse:
        """A small range's export, streamed and signed (a larger one is an export job: POST)."""
        spec = _spec(request.query_params)
        if spec.days > spec.inline_max_days:
            raise Problem(
                413,
                "export_too_large",
                f"{spec.days} days is more than {spec.inline_max_days} streamed at once; POST these parameters to "
                "/api/v1/finance/exports to run it as an export job.",
                max_days=spec.inline_max_days,
            )
        folder = Path(tempfile.mkdtemp(prefix="ladder-export-"))
        try:
            path = folder / spec.file_name
            signature = export_write(spec=spec, path=path)
            response = _file_response(path, signature, spec.file_name, spec.file_format)
        finally:
            shutil.rmtree(folder)  # the response holds the open file: its bytes stay readable until it is closed
        return response

    @extend_schema(
        operation_id="finance_exports_create", request=ExportRequestSerializer, responses={202: ExportJobSerializer}
    )
    def post(self, request: Request) -> Response:
        """Start an export job: written and signed by a worker; poll it, then download it."""
        body = ExportRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        spec = _spec(data)
        job = export_job_request(spec=spec, actor=self.caller.actor)
        job.refresh_from_db()
        answer = Response(ExportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
        answer["Location"] = f"/api/v1/finance/exports/{job.pk}"
        return answer


def _job(pk: int) -> ExportJob:
    job = ExportJob.objects.select_related("tenant").filter(pk=pk).first()
    if job is None:
        raise Http404
    return job


def _done(job: ExportJob) -> tuple[Path, dict[str, Any]]:
    if job.state != ExportState.DONE or not job.signature:
        raise Problem(409, "export_not_ready", f"Export {job.pk} is {job.state}, not done.", state=job.state)
    path = Path(job.path)
    if not path.is_file():
        raise Problem(410, "export_gone", f"The file of export {job.pk} is no longer there.")
    return path, job.signature


class ExportJobView(FinanceView):
    @extend_schema(operation_id="finance_export_job", responses=ExportJobSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(ExportJobSerializer(_job(pk)).data)


class ExportJobDownloadView(FinanceView):
    @extend_schema(
        responses={
            (200, "text/csv"): _FILE,
            (200, "application/vnd.apache.parquet"): _FILE,
            409: OpenApiResponse(description="`export_not_ready`."),
        }
    )
    def get(self, request: Request, pk: int) -> FileResponse:
        job = _job(pk)
        path, signature = _done(job)
        return _file_response(path, signature, path.name, job.file_format)


class ExportJobSignatureView(FinanceView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, 409: OpenApiResponse(description="`export_not_ready`.")})
    def get(self, request: Request, pk: int) -> Response:
        """The detached signature (``FILE.sig.json``): check it with ``python -m compliance.domain.verify_export``."""
        return Response(_done(_job(pk))[1])
