"""The public offerings (``/api/v1/offerings``): what can be bought where, how much of it is free now, at what price
in each capacity class, and both isolation promises in words."""

from __future__ import annotations

from typing import Any, ClassVar

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import LadderView
from billing.selectors import offerings_priced
from provisioning.domain.capacity_classes import CapacityClass
from provisioning.domain.placement.offerings import offerings
from provisioning.domain.promises import performances_words, security_words
from provisioning.fleet_cache import fleet_read


class OfferingTermSerializer(serializers.Serializer[Any]):
    days = serializers.IntegerField(help_text="The shortest term at this price.")
    discount_pct = serializers.IntegerField(help_text="Percent off the on-demand price of a whole GPU.")
    price_per_gpu_hour = serializers.DecimalField(max_digits=16, decimal_places=6)


class OfferingClassSerializer(serializers.Serializer[Any]):
    """One way the offering is sold (docs/capacity.md)."""

    capacity_class = serializers.ChoiceField(choices=[c.value for c in CapacityClass])
    title = serializers.CharField(help_text="As the portal names it.")
    promise = serializers.CharField(help_text="What it promises, in words.")
    preemptible = serializers.BooleanField(help_text="It may be preempted, with notice, for on-demand or reserved work")
    prices = serializers.DictField(
        child=serializers.DecimalField(max_digits=16, decimal_places=6), help_text="Price per unit-hour now, by unit."
    )
    discount_pct = serializers.DecimalField(
        max_digits=5, decimal_places=2, allow_null=True, help_text="Spot: percent off the on-demand price."
    )
    terms = OfferingTermSerializer(
        many=True,
        required=False,
        help_text="Reserved: a reservation's price per GPU-hour for each term a tenant orders (its work: nothing).",
    )


class OfferingHostSerializer(serializers.Serializer[Any]):
    """What each GPU is sold with of its node's host, and the price of more (docs/billing.md, "CPU and memory")."""

    cpu_per_gpu = serializers.IntegerField(help_text="vCPUs sold with each whole GPU.")
    memory_gib_per_gpu = serializers.IntegerField(help_text="GiB of memory sold with each whole GPU.")
    cpu_per_slice = serializers.IntegerField(help_text="vCPUs sold with a MIG slice or a soft share.")
    memory_gib_per_slice = serializers.IntegerField(help_text="GiB sold with a MIG slice or a soft share.")
    most_times = serializers.IntegerField(help_text="A request may ask up to this many times the bundle.")
    prices = serializers.DictField(
        child=serializers.DecimalField(max_digits=16, decimal_places=6),
        help_text='Per hour beyond the bundle: "vcpu" per vCPU, "memory" per GiB (empty: only the bundle is sold).',
    )


class OfferingSerializer(serializers.Serializer[Any]):
    rung = serializers.CharField()
    gpu_model = serializers.CharField()
    region = serializers.CharField()
    performance_isolation = serializers.ListField(child=serializers.CharField())
    security_isolation = serializers.CharField()
    unit = serializers.CharField()
    mig_profiles = serializers.DictField(child=serializers.IntegerField(), help_text="Profile -> slices placeable now.")
    available = serializers.IntegerField(help_text="Free now, in the rung's unit (GPUs, or nodes for bare metal).")
    sovereign_available = serializers.IntegerField(help_text="Free now in halls fenced for sovereign tenants.")
    prices = serializers.DictField(
        child=serializers.DecimalField(max_digits=12, decimal_places=6),
        help_text='Price per unit-hour now, by unit: "gpu", "node" or "mig:<profile>" (empty: not priced yet).',
    )
    currency = serializers.CharField(allow_null=True)
    classes = OfferingClassSerializer(
        many=True, help_text="Each capacity class sold here, with its prices and promise (on demand is `prices`)."
    )
    host = OfferingHostSerializer(allow_null=True, help_text="vCPUs and memory sold with the GPUs; null on bare metal.")
    performance_words = serializers.SerializerMethodField(
        help_text="Each performance isolation in plain words (how the GPU is shared), as the portal says it."
    )
    security_words = serializers.SerializerMethodField(
        help_text="The security isolation in plain words (what separates your work from other tenants')."
    )

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_performance_words(self, row: dict[str, Any]) -> dict[str, str]:
        return performances_words(row["performance_isolation"])

    @extend_schema_field(serializers.CharField())
    def get_security_words(self, row: dict[str, Any]) -> str:
        return security_words(row["security_isolation"])


class OfferingsView(LadderView):
    """What can be bought, and how much of it is free right now. Public."""

    base_permissions: ClassVar[list[type]] = [AllowAny]
    authentication_classes = ()

    @extend_schema(responses=OfferingSerializer(many=True))
    def get(self, request: Request) -> Response:
        with fleet_read() as fleet:
            offered = offerings(fleet.state)
        body = [row.as_dict() for row in offerings_priced(offered, now=timezone.now())]
        return Response(OfferingSerializer(body, many=True).data)
