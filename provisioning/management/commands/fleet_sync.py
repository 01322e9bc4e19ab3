"""``manage.py fleet_sync --cluster NAME``: import a cluster's GPU nodes into its hall from their Node objects and
GPU operator labels (``provisioning/drivers/kubernetes/sync.py``). Prints what was imported and what was skipped, and
why; a cluster that does not answer is an error naming it."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.actor import Actor
from core.errors import ServiceError
from provisioning.drivers.kubernetes.clusters import cluster_sync
from provisioning.models import Cluster
from provisioning.services.fleet import FleetDocumentInvalid


class Command(BaseCommand):
    help = "Import a Kubernetes cluster's GPU nodes into the fleet inventory."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, help="The cluster's name (see /api/v1/ops/clusters).")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["cluster"]
        cluster = Cluster.objects.select_related("hall__region").filter(name=name).first()
        if cluster is None:
            known = ", ".join(Cluster.objects.values_list("name", flat=True)) or "none registered"
            raise CommandError(f"no cluster named {name!r} (known: {known})")
        try:
            result, imported = cluster_sync(cluster=cluster, actor=Actor.system("fleet_sync"))
        except FleetDocumentInvalid as refused:
            for reason in refused.reasons:
                self.stderr.write(str(reason))
            raise CommandError(f"cluster {name}: the nodes do not make a valid fleet; nothing was changed") from None
        except ServiceError as error:  # the cluster did not answer
            raise CommandError(f"cluster {name}: {error}") from None
        self.stdout.write(f"cluster {name} (hall {cluster.hall.code}): {len(imported.nodes)} GPU nodes imported")
        self.stdout.write(str(result.as_dict()))
        for why in imported.skipped:
            self.stdout.write(f"skipped {why}")
        for why in imported.notes:
            self.stdout.write(f"note {why}")
