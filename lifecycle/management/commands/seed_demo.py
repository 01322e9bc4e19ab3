"""``manage.py seed_demo [--json]``: the demo tenants, people, staff and fleet that ``make run`` shows.

Idempotent: tenants and accounts are created once; passwords are reset to the demo ones; each run issues a
fresh demo API key per person (revoking the previous demo key), since a stored key's secret can never be
shown again; the demo fleet goes through ``fleet_load``, so a second run leaves it unchanged; the demo price
book prices every shape the demo fleet offers (nothing runs without a price), once per SKU. Staff need a
second factor for the admin and the consoles: each demo staff user gets a TOTP device with the known demo secret
``DEMO_TOTP_SECRET`` (enrolled once; ``manage.py demo_totp_code USERNAME`` prints its current code). Refuses to run
with DEBUG off unless ``--force``: known passwords do not belong in production.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from billing.models import CostBasis, Sku, StorageCostBasis, StorageKind, Unit
from billing.selectors import sku_shapes
from billing.services.accounts import cost_basis_add, price_set, spot_price_set, storage_cost_basis_add
from billing.services.host import host_price_set
from billing.services.ledger import host_sku, sku_get
from billing.services.storage import storage_price_set, storage_sku
from compliance.models import DataAsset, TenantSecret
from compliance.services.assets import data_asset_create
from compliance.services.secrets import secret_create
from core.actor import Actor
from lifecycle.services.customers import allocation_request, tenant_signup
from lifecycle.services.volumes import volume_create
from provisioning.domain.capacity_classes import CapacityClass, OnPreemption, class_refusal
from provisioning.domain.rungs import Rung, rung_facts
from provisioning.domain.workloads import Workload
from provisioning.drivers.base import simulated_node_public_key
from provisioning.models import Allocation, GpuModel, Hall, Node, Region, Volume
from provisioning.services.capacity import capacity_sample
from provisioning.services.fleet import fleet_load, node_attestation_key_set
from provisioning.services.placing import AllocationSpec
from tenancy.domain.roles import StaffRole, TenantRole
from tenancy.models import ApiKey, ApiKeyScope, SshKey, Tenant
from tenancy.services import api_key_create, api_key_revoke, member_invite, ssh_key_add, staff_user_create
from tenancy.totp import staff_totp_enrol, totp_device, totp_secret

User = get_user_model()

DEMO_KEY_NAME = "demo"
DEMO_SPOT_DISCOUNT = Decimal("60")  # percent off on demand, as the larger clouds' spot often is


@dataclass(frozen=True)
class DemoTenant:
    name: str
    owner: str
    members: dict[str, TenantRole] = field(default_factory=dict)


TENANTS = {
    "acme": DemoTenant("Acme Robotics", "alice", {"bob": TenantRole.MEMBER}),
    "globex": DemoTenant("Globex Research", "charlie"),
}
STAFF = {"finance": StaffRole.FINANCE, "compliance": StaffRole.COMPLIANCE, "operator": StaffRole.OPERATOR}

# The demo staff's TOTP secret (base32): add it to an authenticator app, or ask `manage.py demo_totp_code USERNAME`.
DEMO_TOTP_SECRET = "LADDERDEMOLADDERDEMOLADDERDEMO22"  # noqa: S105 - known on purpose, like the demo passwords

DEMO_VERSIONS = {"driver": "580.65.06", "cuda": "13.0", "nccl": "2.27.7", "firmware": "96.00.B1.00.01"}


def _demo_fabric(hall: str) -> dict[str, Any]:
    """The hall's InfiniBand fabric as one node sees it: eight ConnectX-7 NDR NICs (400 Gb/s), one per GPU, NIC i
    on rail i under GPU i's PCIe switch (a rail-optimised fabric)."""
    nics = [{"device": f"mlx5_{i}", "rail": i, "gpus": [i]} for i in range(8)]
    return {"fabric": f"{hall}/ib-0", "link_layer": "infiniband", "rate_gbps": 400, "nics": nics}


# An 8-GPU HGX server's host: two 96-core CPUs and 2 TiB (3 TiB beside H200s, so that an 8-GPU VM gets twice its
# GPUs' memory), of which the host keeps 8 cores and 64 GiB for itself (the kubelet, the container runtime, the GPU
# and network daemons): 184 cores and 1,984 GiB (3,008 GiB) sold with its GPUs.
DEMO_HOSTS = {
    "H100-SXM-80GB": {"cpu_cores": 192, "memory_gib": 2048, "reserved_cpu_cores": 8, "reserved_memory_gib": 64},
    "H200-141GB": {"cpu_cores": 192, "memory_gib": 3072, "reserved_cpu_cores": 8, "reserved_memory_gib": 64},
}


def _demo_nodes(
    hall: str, model: str, domains: int, per_domain: int, cc: tuple[int, ...] = (), *, rdma: bool = False
) -> list[Any]:
    """``domains`` NVLink domains of ``per_domain`` 8-GPU nodes; the nodes numbered in ``cc`` run in CC mode;
    with ``rdma``, every node is cabled to the hall's fabric."""
    short = model.split("-")[0].lower()
    nodes = []
    for d in range(domains):
        for i in range(per_domain):
            number = d * per_domain + i + 1
            nodes.append(
                {
                    "hostname": f"{hall}-{short}-{number:02d}",
                    "gpu_model": model,
                    "gpu_count": 8,
                    "nvlink_domain": f"{hall}/nvl-{d}",
                    "cc_capable": number in cc,
                    "cc_mode": number in cc,
                    # The demo's CC hosts: AMD SEV-SNP in one hall, Intel TDX in the other.
                    "cpu_tee": ("snp" if hall.startswith("eu") else "tdx") if number in cc else None,
                    "versions": DEMO_VERSIONS,
                    "host": DEMO_HOSTS[model],
                }
                | ({"rdma": _demo_fabric(hall)} if rdma else {})
            )
    return nodes


# Two regions, three halls (eu-west-1b fenced for EU sovereign tenants), H100 and H200 nodes; the H100 hall's nodes
# are cabled to one InfiniBand fabric, so a multi-node job there runs over RDMA.
DEMO_FLEET: dict[str, Any] = {
    "regions": [
        {
            "code": "eu-west",
            "name": "EU West (Frankfurt)",
            "jurisdiction": "EU",
            "halls": [
                {
                    "code": "eu-west-1a",
                    "fenced_for": None,
                    "nodes": _demo_nodes("eu-west-1a", "H100-SXM-80GB", 3, 2, rdma=True),
                },
                {
                    "code": "eu-west-1b",
                    "fenced_for": "EU",
                    "nodes": _demo_nodes("eu-west-1b", "H200-141GB", 1, 2, cc=(2,)),
                },
            ],
        },
        {
            "code": "us-east",
            "name": "US East (Virginia)",
            "jurisdiction": "US",
            "halls": [
                {
                    "code": "us-east-1a",
                    "fenced_for": None,
                    "nodes": _demo_nodes("us-east-1a", "H200-141GB", 3, 2, cc=(6,)),
                },
            ],
        },
    ]
}


H100 = "H100-SXM-80GB"
# The operator's cost of a GPU-hour (docs/finance.md): capex amortised over four years with the server's share,
# space and network per GPU; power per GPU-hour at each region's tariff (700 W with cooling overhead).
DEMO_COST = {
    "H100-SXM-80GB": {"capex": Decimal("1.05"), "space": Decimal("0.08"), "network": Decimal("0.05")},
    "H200-141GB": {"capex": Decimal("1.40"), "space": Decimal("0.08"), "network": Decimal("0.05")},
}
DEMO_POWER = {"eu-west": Decimal("0.19"), "us-east": Decimal("0.10")}
DEMO_GPU_HOUR = {"H100-SXM-80GB": Decimal("2.49"), "H200-141GB": Decimal("3.39")}  # list price per GPU-hour
DEMO_RUNG_FACTOR = {  # bare metal first: it is priced per node
    Rung.BARE_METAL: Decimal("0.90"),
    Rung.VM: Decimal("1.00"),
    Rung.CONFIDENTIAL_VM: Decimal("1.25"),
    Rung.CONTAINER: Decimal("1.05"),
    Rung.JOB: Decimal("1.00"),
    Rung.SERVERLESS: Decimal("1.20"),
}
# A MIG slice's price over its share of the GPU's compute, on the rungs that sell slices.
DEMO_MIG_PREMIUM = {Rung.CONTAINER: Decimal("1.10"), Rung.SERVERLESS: Decimal("1.25")}
PYTORCH = "nvcr.io/nvidia/pytorch:25.01-py3"
SSH = "ssh-key"  # stands for the demo SSH key's id in a workload below
DATASETS = "datasets"  # acme's shared filesystem volume, named by its id in a workload below
# The demo storage prices per GB-month (kept per GB-hour: HOURS_PER_MONTH of them make a storage month), and what
# a GB-month of each costs the operator (the disks with their replicas, the storage servers, power and space).
DEMO_STORAGE_GB_MONTH = {
    StorageKind.FILESYSTEM: Decimal("0.07"),
    StorageKind.BLOCK: Decimal("0.10"),
    StorageKind.SNAPSHOT: Decimal("0.05"),
}
DEMO_STORAGE_COST_GB_MONTH = {
    StorageKind.FILESYSTEM: Decimal("0.03"),
    StorageKind.BLOCK: Decimal("0.04"),
    StorageKind.SNAPSHOT: Decimal("0.015"),
}
# The demo prices of a vCPU-hour and a GiB-hour beyond the bundle each GPU is sold with (``host_price_set``).
DEMO_HOST_HOUR = {Unit.VCPU: Decimal("0.02"), Unit.MEMORY: Decimal("0.004")}
DEMO_SECRET = ("HF_TOKEN", "hf_demo-token-not-a-real-one")
DEMO_ALLOCATIONS: list[tuple[str, str, AllocationSpec, dict[str, Any]]] = [
    (
        "acme",
        "notebook",
        AllocationSpec(rung=Rung.CONTAINER, gpu_models=(H100,), gpus=1),
        {
            "image": PYTORCH,
            "command": ["jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser"],
            "env": [("JUPYTER_ENABLE_LAB", "yes")],
            "secrets": ["HF_TOKEN"],
            "ports": [{"port": 8888, "protocol": "http", "expose": "public"}],
            "ssh_keys": [SSH],
            "volumes": [{"volume": DATASETS, "mount_path": "/data"}],
        },
    ),
    (
        "acme",
        "inference",
        AllocationSpec(rung=Rung.SERVERLESS, gpu_models=(H100,), mig_profile="3g.40gb"),
        {
            "image": "docker.io/vllm/vllm-openai:v0.8.4",
            "command": ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--port", "8000"],
            "secrets": ["HF_TOKEN"],
            "ports": [{"port": 8000, "protocol": "http", "expose": "public"}],
        },
    ),
    (
        "acme",
        "workstation",
        AllocationSpec(rung=Rung.VM, gpu_models=(H100,), gpus=1),
        {
            "os_image": "ubuntu-24.04",
            "cloud_init": "#cloud-config\npackages: [nvtop, tmux]\n",
            "ssh_keys": [SSH],
        },
    ),
    (
        "acme",
        "metal",
        AllocationSpec(rung=Rung.BARE_METAL, gpu_models=(H100,), nodes=1),
        {"os_image": "ubuntu-22.04", "ssh_keys": [SSH]},
    ),
    (
        "globex",
        "enclave",
        AllocationSpec(rung=Rung.CONFIDENTIAL_VM, gpu_models=("H200-141GB",), gpus=1, regions=("us-east",)),
        {
            "image": PYTORCH,
            "command": ["python", "-m", "private_inference", "--attested"],
            "ports": [{"port": 8443, "protocol": "http", "expose": "tenant"}],
        },
    ),
    (
        "acme",
        "pretrain",
        AllocationSpec(rung=Rung.JOB, gpu_models=(H100,), gpus=8, gang_size=2, topology="nvlink"),
        {
            "image": PYTORCH,
            "command": ["torchrun", "--nnodes=2", "--nproc-per-node=8", "train.py"],
            "args": ["--model", "llama-3-8b", "--steps", "100000"],
            "env": [("NCCL_DEBUG", "WARN")],
            "checkpoint": {"path": "/checkpoints", "interval_s": 600},
            "volumes": [{"volume": DATASETS, "mount_path": "/data", "read_only": True}],
        },
    ),
]


def demo_password(username: str) -> str:
    return f"{username}-ladder-demo"


class Command(BaseCommand):
    help = "Create or refresh the demo tenants, users, staff and API keys."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print exactly one JSON object to stdout.")
        parser.add_argument("--force", action="store_true", help="Run even with DEBUG off.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError("seed_demo creates accounts with known passwords; run it with DEBUG=1 or --force.")
        result = self.seed()
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        fleet = result["fleet"]["nodes"]
        self.stdout.write(
            f"Demo fleet: {sum(fleet.values())} nodes ({fleet['created']} new, {fleet['updated']} updated)."
        )
        self.stdout.write("Demo logins (password / API key):")
        for slug, tenant in result["tenants"].items():
            for username, creds in tenant["users"].items():
                self.stdout.write(f"  {slug:8} {username:10} {creds['password']:24} {creds['api_key']}")
        for username, creds in result["staff"].items():
            self.stdout.write(f"  {'staff':8} {username:10} {creds['password']:24} {creds['api_key']}")
        self.stdout.write(
            f"Demo staff second factor: TOTP secret {DEMO_TOTP_SECRET} in an authenticator app, or the current "
            "code from `manage.py demo_totp_code USERNAME`."
        )

    @staticmethod
    def _attestation_keys(actor: Actor) -> None:
        """Register each demo CC host's attestation key, as an operator does: the simulated fleet's hosts sign
        their guests' evidence with it, and the verifier checks it against this."""
        for node in Node.objects.filter(cc_mode=True):
            public_key = simulated_node_public_key(node.hostname)
            if node.attestation_key != public_key:
                node_attestation_key_set(node=node, public_key=public_key, actor=actor, reason="simulated host")

    @transaction.atomic
    def seed(self) -> dict[str, Any]:
        actor = Actor.system("seed_demo")
        out: dict[str, Any] = {"tenants": {}, "staff": {}}
        for slug, spec in TENANTS.items():
            owner = spec.owner
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None:
                tenant = tenant_signup(
                    slug=slug,
                    name=spec.name,
                    username=owner,
                    email=f"{owner}@{slug}.example",
                    password=None,
                    actor=actor,
                )
            for username, role in spec.members.items():
                if not User.objects.filter(username=username).exists():
                    member_invite(
                        tenant=tenant,
                        actor_role=TenantRole.OWNER,
                        username=username,
                        email=f"{username}@{slug}.example",
                        role=role,
                        actor=actor,
                    )
            users = [owner, *spec.members]
            out["tenants"][slug] = {"users": {u: self._credentials(u, actor) for u in users}}
        for username, staff_role in STAFF.items():
            if not User.objects.filter(username=username).exists():
                staff_user_create(username=username, role=staff_role, password=demo_password(username), actor=actor)
            out["staff"][username] = {**self._credentials(username, actor), "totp_secret": self._totp(username, actor)}
        out["fleet"] = fleet_load(document=DEMO_FLEET, actor=actor).as_dict()
        self._attestation_keys(actor)
        out["prices"] = self._price_book(actor) + self._storage_price_book(actor) + self._host_price_book(actor)
        out["cost_basis"] = self._cost_book(actor)
        out["volumes"] = self._volumes(actor)
        out["allocations"] = self._allocations(actor)
        out["capacity_samples"] = capacity_sample(now=timezone.now())
        out["data_assets"] = self._data_assets(actor)
        return out

    def _data_assets(self, actor: Actor) -> int:
        """A dataset of acme's and a checkpoint trained on it (lineage), with content; created once."""

        tenant = Tenant.objects.get(slug="acme")
        if DataAsset.objects.filter(tenant=tenant, name="demo-corpus").exists():
            return 0
        corpus = data_asset_create(
            tenant=tenant,
            name="demo-corpus",
            category="dataset",
            region="eu-west",
            content=b'{"text": "a demo training example"}\n',
            actor=actor,
        )
        data_asset_create(
            tenant=tenant,
            name="demo-checkpoint-step-1000",
            category="checkpoint",
            region="eu-west",
            size_bytes=2 * 1024**3,
            derived_from=[corpus.pk],
            actor=actor,
        )
        return 2

    def _price_book(self, actor: Actor) -> int:
        """A demo price book for every shape the demo fleet offers (``sku_shapes``: every rung of every model in
        every region, MIG slices on each rung that sells them): nothing runs without a price, so the demo's own
        workloads and a newcomer's first launch must find one; each shape that may be bought as spot is sold as spot
        too, ``DEMO_SPOT_DISCOUNT`` off. Prices are set once per SKU."""
        created = 0
        now = timezone.now()
        pairs = Node.objects.values_list("gpu_model", "hall__region").order_by().distinct()
        for model_id, region_id in pairs:
            model, region = GpuModel.objects.get(pk=model_id), Region.objects.get(pk=region_id)
            for rung, unit, profile in sku_shapes(model):
                sku = sku_get(rung=rung, gpu_model=model, unit=unit, mig_profile=profile, region=region)
                if not sku.prices.exists():
                    price_set(
                        sku=sku,
                        unit_price_per_hour=self._demo_price(model.name, rung, unit, profile),
                        effective_from=now,
                        actor=actor,
                    )
                    created += 1
                spot = class_refusal(CapacityClass.SPOT, rung_facts(rung), OnPreemption.STOP, reservation=None)
                spot_code = Sku.make_code(rung, model.name, unit, profile, region.code, CapacityClass.SPOT)
                if spot is None and not Sku.objects.filter(code=spot_code).exists():
                    spot_price_set(sku=sku, discount_pct=DEMO_SPOT_DISCOUNT, effective_from=now, actor=actor)
                    created += 1
        return created

    @staticmethod
    def _host_price_book(actor: Actor) -> int:
        """A price per vCPU-hour and GiB-hour beyond the bundle in each region (``DEMO_HOST_HOUR``), set once per
        SKU."""
        created = 0
        for region in Region.objects.all():
            for unit, per_hour in DEMO_HOST_HOUR.items():
                if not host_sku(unit=unit, region=region).prices.exists():
                    host_price_set(
                        region=region,
                        unit=unit,
                        unit_price_per_hour=per_hour,
                        effective_from=timezone.now(),
                        actor=actor,
                    )
                    created += 1
        return created

    @staticmethod
    def _storage_price_book(actor: Actor) -> int:
        """A storage price per region and kind (``DEMO_STORAGE_GB_MONTH``), quoted per GB-month and kept per
        GB-hour (``storage_price_set``), set once per SKU."""
        created = 0
        for region in Region.objects.all():
            for kind, per_month in DEMO_STORAGE_GB_MONTH.items():
                if not storage_sku(storage_kind=kind, region=region).prices.exists():
                    storage_price_set(
                        region=region,
                        storage_kind=kind,
                        price_per_gb_month=per_month,
                        effective_from=timezone.now(),
                        actor=actor,
                    )
                    created += 1
        return created

    @staticmethod
    def _volumes(actor: Actor) -> int:
        """acme's ``datasets``: a shared filesystem in eu-west that its notebook and its training job mount;
        created once."""
        tenant = Tenant.objects.get(slug="acme")
        if Volume.objects.filter(tenant=tenant, name=DATASETS).exists():
            return 0
        region = Region.objects.get(code="eu-west")
        volume_create(tenant=tenant, name=DATASETS, region=region, kind="filesystem", size_gb=500, actor=actor)
        return 1

    @staticmethod
    def _demo_price(model: str, rung: str, unit: str, profile: str) -> Decimal:
        """The demo list price per unit-hour: the model's GPU-hour times the rung's factor; a node is eight GPUs; a
        MIG slice costs its share of the GPU's compute plus its premium (``DEMO_MIG_PREMIUM``)."""
        per_gpu = DEMO_GPU_HOUR[model]
        if unit == Unit.NODE:
            per_hour = per_gpu * 8 * DEMO_RUNG_FACTOR[Rung(rung)]
        elif unit == Unit.MIG:
            share = Decimal(int(profile.split("g.")[0])) / 7
            per_hour = per_gpu * share * DEMO_MIG_PREMIUM[Rung(rung)]
        else:
            per_hour = per_gpu * DEMO_RUNG_FACTOR[Rung(rung)]
        return per_hour.quantize(Decimal("0.0001"))

    def _cost_book(self, actor: Actor) -> int:
        """What a GPU-hour costs in each demo hall from the start of this month (capex over four years, power at
        the hall's tariff, space and network), and a GB-month of each storage kind in each region
        (``DEMO_STORAGE_COST_GB_MONTH``); set once."""
        created = 0
        start = timezone.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        for model_id, hall_id in Node.objects.values_list("gpu_model", "hall").order_by().distinct():
            model, hall = GpuModel.objects.get(pk=model_id), Hall.objects.get(pk=hall_id)
            if CostBasis.objects.filter(gpu_model=model, hall=hall).exists():
                continue
            parts = {**DEMO_COST[model.name], "power": DEMO_POWER[hall.region.code]}
            cost_basis_add(gpu_model=model, hall=hall, effective_from=start, parts=parts, currency="usd", actor=actor)
            created += 1
        for region in Region.objects.all():
            for kind, per_month in DEMO_STORAGE_COST_GB_MONTH.items():
                if StorageCostBasis.objects.filter(region=region, storage_kind=kind).exists():
                    continue
                storage_cost_basis_add(
                    region=region,
                    storage_kind=kind,
                    effective_from=start,
                    cost_per_gb_month=per_month,
                    currency="usd",
                    actor=actor,
                )
                created += 1
        return created

    def _allocations(self, actor: Actor) -> int:
        """A workload a user would recognise on most rungs (a notebook, an inference endpoint, a VM, a bare-metal
        host, a training job), so the demo shows access details, logs and events; created once."""
        created = 0
        for slug, name, spec, fields in DEMO_ALLOCATIONS:
            tenant = Tenant.objects.get(slug=slug)
            if not Allocation.objects.filter(tenant=tenant, name=name).exists():
                workload = self._workload(tenant, fields, actor)
                allocation_request(tenant=tenant, name=name, spec=spec, actor=actor, workload=workload)
                created += 1
        return created

    def _workload(self, tenant: Tenant, fields: dict[str, Any], actor: Actor) -> Workload:
        """The workload, with the tenant's demo secret and SSH key made on first use."""
        if fields.get("secrets") and not TenantSecret.objects.filter(tenant=tenant, name=DEMO_SECRET[0]).exists():
            secret_create(tenant=tenant, name=DEMO_SECRET[0], value=DEMO_SECRET[1], actor=actor)
        keys = []
        if fields.get("ssh_keys"):
            key = SshKey.objects.filter(tenant=tenant, name="demo").first()
            if key is None:
                private = ed25519.Ed25519PrivateKey.generate()
                line = private.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
                key = ssh_key_add(tenant=tenant, name="demo", public_key=f"{line} demo@{tenant.slug}", actor=actor)
            keys = [key.pk]
        datasets = Volume.objects.filter(tenant=tenant, name=DATASETS).values_list("pk", flat=True).first()
        volumes = [{**v, "volume": datasets} if v.get("volume") == DATASETS else v for v in fields.get("volumes", [])]
        return Workload.from_json(
            {
                **fields,
                "env": [{"name": k, "value": v} for k, v in fields.get("env", [])],
                "secrets": [{"name": n} for n in fields.get("secrets", [])],
                "ssh_keys": keys,
                "volumes": volumes,
            }
        )

    @staticmethod
    def _totp(username: str, actor: Actor) -> str:
        """The staff user's device with the demo secret (enrolled once; one with another secret is replaced)."""
        user = User.objects.get(username=username)
        device = totp_device(user)
        if device is None or totp_secret(device) != DEMO_TOTP_SECRET:
            staff_totp_enrol(user=user, actor=actor, secret=DEMO_TOTP_SECRET, replace=True)
        return DEMO_TOTP_SECRET

    def _credentials(self, username: str, actor: Actor) -> dict[str, str]:
        user = User.objects.get(username=username)
        user.set_password(demo_password(username))
        user.save(update_fields=["password"])
        for old in ApiKey.objects.filter(user=user, name=DEMO_KEY_NAME, revoked_at=None):
            api_key_revoke(key=old, actor=actor)
        issued = api_key_create(
            user=user, name=DEMO_KEY_NAME, scopes=[ApiKeyScope.READ, ApiKeyScope.WRITE], expires_at=None, actor=actor
        )
        return {"password": demo_password(username), "api_key": issued.token}
