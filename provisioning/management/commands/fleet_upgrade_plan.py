"""``manage.py fleet_upgrade_plan [--max-share 0.1] [--max-domains N] [--json]``: print the rolling upgrade that
brings drifting nodes to their GPU model's target versions (``GET /api/v1/ops/fleet/upgrade-plan``): waves of whole
NVLink domains, emptiest first, with the allocations to move or checkpoint before each drain. Only a plan: nothing
is drained."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from provisioning.domain.upgrades import PlanLimitError
from provisioning.selectors import fleet_upgrade_plan


class Command(BaseCommand):
    help = "Print the rolling upgrade plan: waves of whole drifting NVLink domains."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--max-share", type=float, help="Share of the fleet's GPUs one wave may take (0-1].")
        parser.add_argument("--max-domains", type=int, help="NVLink domains one wave may take.")
        parser.add_argument("--json", action="store_true", help="The plan as the API returns it.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            plan = fleet_upgrade_plan(max_share=options["max_share"], max_domains=options["max_domains"])
        except PlanLimitError as error:
            raise CommandError(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(plan, indent=2))
            return
        waves: list[dict[str, Any]] = plan["waves"]
        limit = plan["max_gpus_per_wave"]
        if plan["max_domains_per_wave"] is not None:
            limit = f"{limit} GPUs, {plan['max_domains_per_wave']} domains"
        self.stdout.write(f"{plan['fleet_gpus']} GPUs in the fleet; at most {limit} per wave; {len(waves)} waves")
        if not waves:
            self.stdout.write("nothing drifts from its target: no upgrade to plan")
        for wave in waves:
            self.stdout.write(f"wave {wave['wave']}: {wave['gpus']} GPUs, {wave['gpus_in_use']} in use")
            for domain in wave["domains"]:
                hosts = ", ".join(n["hostname"] + ("" if n["drifting"] else " (at target)") for n in domain["nodes"])
                self.stdout.write(f"  drain {domain['hall']}/{domain['nvlink_domain']}: {hosts}")
            for allocation in wave["allocations"]:
                where = ", ".join(allocation["hostnames"])
                self.stdout.write(
                    f"  first {allocation['action']} allocation {allocation['id']} "
                    f"({allocation['tenant']}, {allocation['rung']}) on {where}"
                )
