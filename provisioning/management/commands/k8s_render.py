"""``manage.py k8s_render --allocation ID | --tenant SLUG | --cluster-setup``: print the YAML documents Ladder
would apply, so a person can review exactly what will reach a cluster. Nothing is applied, and no secret is
resolved: an allocation's secret values, pull credentials, dataset URLs and SSH keys print as placeholders."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from provisioning.domain.rungs import Rung
from provisioning.domain.workloads import Workload
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.desired import allocation_shape, tenant_shape
from provisioning.models import Allocation, Node
from provisioning.services.workloads import mounted_volumes, os_images
from tenancy.models import Tenant


class Command(BaseCommand):
    help = (
        "Print the Kubernetes manifests of an allocation, a tenant's namespace set, or the one-time cluster setup. "
        'Secret values never print: an allocation renders with placeholders ("<secret NAME>", "<dataset ID>", '
        '"<ssh key ID>") where its workload names secrets, pull credentials, datasets and SSH keys.'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument(
            "--allocation", type=int, help="An allocation's id: its objects, secret values shown as placeholders."
        )
        what.add_argument("--tenant", help="A tenant's slug: its namespace, quota, limits, network policies, queue.")
        what.add_argument("--cluster-setup", action="store_true", help="What an operator installs once per cluster.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["cluster_setup"]:
            models = sorted(set(Node.objects.values_list("gpu_model__name", flat=True)))
            objects = render.cluster_setup(
                models,
                base_domain=settings.LADDER_BASE_DOMAIN,
                hold_seconds=settings.LADDER_SERVERLESS_WAKE_WAIT_SECONDS,
            )
        elif options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"no tenant {options['tenant']!r}")
            objects = render.namespace_set(tenant_shape(tenant))
        else:
            allocation = (
                Allocation.objects.select_related("tenant", "hall", "gpu_model")
                .filter(pk=options["allocation"])
                .first()
            )
            if allocation is None:
                raise CommandError(f"no allocation {options['allocation']}")
            workload = Workload.from_json(allocation.workload) if allocation.workload else None
            volumes = mounted_volumes(allocation, workload)  # they hold no secret: as the driver mounts them
            materials = render.placeholder_materials(workload, os_images(), volumes=volumes)
            shape = allocation_shape(allocation, materials=materials)
            if shape.slurm_key is not None:
                shape = replace(shape, slurm_key="<slurm auth key>")  # for review: a placeholder, as for secrets
            try:
                if allocation.rung == Rung.BARE_METAL:
                    objects = render.bare_metal_node_patches(shape) + render.bare_metal_host_objects(shape)
                else:
                    objects = render.share_claims(shape) + render.allocation_objects(shape)
            except ValueError as error:
                raise CommandError(str(error)) from None
        self.stdout.write(render.documents(objects), ending="")
