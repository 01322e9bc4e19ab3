"""``manage.py k8s_render --allocation ID | --tenant SLUG | --cluster-setup``: print the YAML documents Ladder
would apply, so a person can review exactly what will reach a cluster. Nothing is applied."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from provisioning.kubernetes import render
from provisioning.kubernetes.driver import allocation_shape, tenant_shape
from provisioning.models import Allocation, Node
from provisioning.placement.isolation import Rung
from tenancy.models import Tenant


class Command(BaseCommand):
    help = "Print the Kubernetes manifests of an allocation, a tenant's namespace set, or the one-time cluster setup."

    def add_arguments(self, parser: CommandParser) -> None:
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--allocation", type=int, help="An allocation's id: its workload objects.")
        what.add_argument("--tenant", help="A tenant's slug: its namespace, quota, limits, network policies, queue.")
        what.add_argument("--cluster-setup", action="store_true", help="What an operator installs once per cluster.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["cluster_setup"]:
            models = sorted(set(Node.objects.values_list("gpu_model__name", flat=True)))
            objects = render.cluster_setup(models)
        elif options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"no tenant {options['tenant']!r}")
            objects = render.namespace_set(tenant_shape(tenant))
        else:
            allocation = (
                Allocation.objects.select_related("tenant", "gpu_model").filter(pk=options["allocation"]).first()
            )
            if allocation is None:
                raise CommandError(f"no allocation {options['allocation']}")
            shape = allocation_shape(allocation)
            try:
                objects = (
                    render.bare_metal_node_patches(shape)
                    if allocation.rung == Rung.BARE_METAL
                    else render.allocation_objects(shape)
                )
            except ValueError as error:
                raise CommandError(str(error)) from None
        self.stdout.write(render.documents(objects), ending="")
