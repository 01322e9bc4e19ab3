"""fleet_load and ``manage.py fleet_load``: a document checked whole, then upserted idempotently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import transaction

from compliance.selectors import audit_chain_verify
from core.actor import Actor
from core.models import AuditEvent
from provisioning.domain.fleet_document import check, format_path
from provisioning.domain.json_source import parse_text
from provisioning.domain.placement.catalog import CATALOG
from provisioning.models import Gpu, GpuModel, Hall, Node, NodeState, Region
from provisioning.services.fleet import FleetDocumentInvalid, fleet_load, gpu_models_sync, gpu_uuid
from tests.support.fleet_documents import (
    DELETE,
    SMALL_FLEET_GPUS,
    SMALL_FLEET_NODES,
    changed,
    node,
    pretty,
    small_fleet,
)

pytestmark = pytest.mark.django_db

ACTOR = Actor.system("tests")


def load(document):
    return fleet_load(document=document, actor=ACTOR).as_dict()


def snapshot():
    """Every fleet row as plain values, to prove a load changed nothing."""
    return (
        list(Region.objects.values()),
        list(Hall.objects.values()),
        list(Node.objects.values()),
        list(Gpu.objects.values()),
        list(GpuModel.objects.values()),
    )


def reasons_of(document):
    spec, reasons = check(document)
    assert spec is None
    return {format_path(r.path): r.message for r in reasons}


# --- loading ----------------------------------------------------------------------------------------------


def test_it_loads_a_fleet():
    result = load(small_fleet())

    assert result == {
        "gpu_models": {"created": len(CATALOG), "updated": 0, "unchanged": 0},
        "regions": {"created": 2, "updated": 0, "unchanged": 0},
        "halls": {"created": 3, "updated": 0, "unchanged": 0},
        "nodes": {"created": SMALL_FLEET_NODES, "updated": 0, "unchanged": 0},
        "gpus": {"created": SMALL_FLEET_GPUS, "deleted": 0, "unchanged": 0},
    }
    assert Hall.objects.get(code="eu-west-1b").fenced_for == "EU"
    assert Hall.objects.get(code="eu-west-1a").fenced_for is None
    assert Region.objects.get(code="us-east").jurisdiction == "US"
    cc = Node.objects.select_related("hall__region", "gpu_model").get(hostname="euw1b-01")
    assert (cc.hall.code, cc.hall.region.code, cc.gpu_model.name) == ("eu-west-1b", "eu-west", "H200-141GB")
    assert (cc.cc_capable, cc.cc_mode, cc.gpu_count, cc.nvlink_domain) == (True, True, 8, "eu-west-1b/nvl-0")
    assert (cc.driver_version, cc.cuda_version, cc.nccl_version, cc.firmware_version) == (
        "580.65.06",
        "13.0",
        "2.27.7",
        "96.00.B1.00.01",
    )
    assert set(Node.objects.values_list("state", flat=True)) == {NodeState.READY}
    small = Node.objects.get(hostname="euw1a-03")
    assert list(small.gpus.values_list("index", "uuid", "mode")) == [
        (i, gpu_uuid("euw1a-03", i), "whole") for i in range(4)
    ]
    assert gpu_uuid("euw1a-03", 0).startswith("GPU-")


def test_gpu_models_mirror_the_catalog():
    load(small_fleet())
    rows = {m.name: m for m in GpuModel.objects.all()}
    assert set(rows) == set(CATALOG)
    h100 = rows["H100-SXM-80GB"]
    assert (h100.memory_gb, h100.cc_capable) == (80, True)
    assert h100.mig_profiles["3g.40gb"] == "3g"
    assert h100.mig_profiles["1g.10gb+me"] == "1g+me"
    assert rows["A100-40GB"].cc_capable is False


def test_gpu_models_sync_puts_a_drifted_row_back():
    load(small_fleet())
    GpuModel.objects.filter(name="B200").update(memory_gb=1, mig_profiles={})
    result = load(small_fleet())
    assert result["gpu_models"] == {"created": 0, "updated": 1, "unchanged": len(CATALOG) - 1}
    assert GpuModel.objects.get(name="B200").memory_gb == CATALOG["B200"].memory_gb


@pytest.mark.django_db(transaction=True)
def test_gpu_models_sync_runs_only_inside_a_transaction():
    with pytest.raises(RuntimeError, match="inside the transaction"):
        gpu_models_sync()
    with transaction.atomic():
        assert gpu_models_sync().created == len(CATALOG)


def test_it_records_one_audit_event_with_the_counts():
    result = load(small_fleet())
    event = AuditEvent.objects.get(action="fleet.loaded")
    assert (event.actor_type, event.actor_label, event.target_type) == ("system", "tests", "fleet")
    assert event.data["nodes"] == result["nodes"]
    assert event.data["gpus"] == result["gpus"]
    assert event.data["updated"] == {"regions": [], "halls": [], "nodes": []}
    assert len(event.data["document_sha256"]) == 64
    assert audit_chain_verify().ok


def test_loading_twice_changes_nothing():
    load(small_fleet())
    before = snapshot()

    second = load(small_fleet())

    assert second == {
        "gpu_models": {"created": 0, "updated": 0, "unchanged": len(CATALOG)},
        "regions": {"created": 0, "updated": 0, "unchanged": 2},
        "halls": {"created": 0, "updated": 0, "unchanged": 3},
        "nodes": {"created": 0, "updated": 0, "unchanged": SMALL_FLEET_NODES},
        "gpus": {"created": 0, "deleted": 0, "unchanged": SMALL_FLEET_GPUS},
    }
    assert snapshot() == before


def test_it_updates_what_changed_and_never_a_nodes_state():
    load(small_fleet())
    Node.objects.filter(hostname="euw1a-01").update(state=NodeState.DRAINING)
    document = changed(small_fleet(), "regions.0.halls.0.nodes.0.versions.driver", "580.95.05")
    document = changed(document, "regions.0.halls.1.fenced_for", None)
    document = changed(document, "regions.1.name", "US East (Virginia)")

    result = load(document)

    assert result["nodes"] == {"created": 0, "updated": 1, "unchanged": SMALL_FLEET_NODES - 1}
    assert result["halls"] == {"created": 0, "updated": 1, "unchanged": 2}
    assert result["regions"] == {"created": 0, "updated": 1, "unchanged": 1}
    upgraded = Node.objects.get(hostname="euw1a-01")
    assert (upgraded.driver_version, upgraded.state) == ("580.95.05", NodeState.DRAINING)
    assert Hall.objects.get(code="eu-west-1b").fenced_for is None
    event = AuditEvent.objects.filter(action="fleet.loaded").order_by("-seq").first()
    assert event is not None
    assert event.data["updated"] == {"regions": ["us-east"], "halls": ["eu-west-1b"], "nodes": ["euw1a-01"]}


def test_a_shrinking_node_loses_its_highest_gpus_and_gets_the_same_ones_back():
    load(small_fleet())
    keep = list(Gpu.objects.filter(node__hostname="euw1a-01", index__lt=3).values_list("pk", "uuid"))

    shrunk = load(changed(small_fleet(), "regions.0.halls.0.nodes.0.gpu_count", 3))

    assert shrunk["gpus"] == {"created": 0, "deleted": 5, "unchanged": SMALL_FLEET_GPUS - 5}
    assert shrunk["nodes"]["updated"] == 1
    assert list(Gpu.objects.filter(node__hostname="euw1a-01").values_list("pk", "uuid")) == keep

    grown = load(small_fleet())
    assert grown["gpus"] == {"created": 5, "deleted": 0, "unchanged": SMALL_FLEET_GPUS - 5}
    uuids = list(Gpu.objects.filter(node__hostname="euw1a-01").values_list("uuid", flat=True))
    assert uuids == [gpu_uuid("euw1a-01", i) for i in range(8)]


def test_nodes_the_document_does_not_list_are_left_alone():
    load(small_fleet())
    partial = {"regions": [{**small_fleet()["regions"][1]}]}
    result = load(partial)
    assert result["nodes"] == {"created": 0, "updated": 0, "unchanged": 1}
    assert Node.objects.count() == SMALL_FLEET_NODES


def test_an_empty_fleet_loads_nothing():
    assert load({"regions": []})["nodes"] == {"created": 0, "updated": 0, "unchanged": 0}


# --- refusals ---------------------------------------------------------------------------------------------

NODE = "regions.0.halls.0.nodes.0"
NODE_PATH = "regions[0].halls[0].nodes[0]"


@pytest.mark.parametrize(
    ("path", "value", "where", "message"),
    [
        (f"{NODE}.gpu_model", "H100", "gpu_model", 'unknown GPU model "H100"'),
        (f"{NODE}.gpu_count", 0, "gpu_count", "must be 1 to 8, not 0"),
        (f"{NODE}.gpu_count", 9, "gpu_count", "must be 1 to 8, not 9"),
        (f"{NODE}.gpu_count", 8.0, "gpu_count", "must be a whole number, not 8.0"),
        (f"{NODE}.gpu_count", True, "gpu_count", "must be a whole number, not a boolean"),
        (f"{NODE}.gpu_count", "8", "gpu_count", "must be a whole number, not a string"),
        (f"{NODE}.gpu_count", DELETE, "gpu_count", "is required"),
        (f"{NODE}.hostname", "Node_1", "hostname", "must be a lower-case DNS name"),
        (f"{NODE}.hostname", 7, "hostname", "must be a string, not a number"),
        (f"{NODE}.cc_capable", "no", "cc_capable", "must be true or false, not a string"),
        (f"{NODE}.cc_mode", True, "cc_mode", "needs a cc_capable node"),
        (f"{NODE}.nvlink_domain", "", "nvlink_domain", "must be 1 to 100 characters"),
        (f"{NODE}.versions", "580", "versions", "must be an object, not a string"),
        (f"{NODE}.versions.cuda", 13.0, "versions.cuda", "must be a string, not a number"),
        (f"{NODE}.versions.nccl", DELETE, "versions.nccl", "is required"),
        (f"{NODE}.versions.bios", "1.0", "versions.bios", "unknown field"),
        (f"{NODE}.gpus", 8, "gpus", "unknown field"),
    ],
)
def test_a_bad_node_field_is_named_by_its_path(path, value, where, message):
    reasons = reasons_of(changed(small_fleet(), path, value))
    assert message in reasons[f"{NODE_PATH}.{where}"], reasons
    assert len(reasons) == 1, reasons


@pytest.mark.parametrize(
    ("path", "value", "where", "message"),
    [
        ("regions.0.jurisdiction", "eu", "regions[0].jurisdiction", "must be 2 to 8 upper-case letters"),
        ("regions.0.jurisdiction", "EUROPEANU", "regions[0].jurisdiction", "must be 2 to 8 upper-case letters"),
        ("regions.0.halls.1.fenced_for", "E", "regions[0].halls[1].fenced_for", "must be null or 2 to 8 upper-case"),
        ("regions.0.halls.1.fenced_for", DELETE, "regions[0].halls[1].fenced_for", "is required"),
        ("regions.0.halls.0.code", "EU_West", "regions[0].halls[0].code", "lower-case letters and digits"),
        ("regions.0.code", "x" * 41, "regions[0].code", "at most 40 characters"),
        ("regions.0.name", " ", "regions[0].name", "1 to 200 characters"),
        ("regions.1.halls", {}, "regions[1].halls", "must be an array, not an object"),
        ("regions.1.halls.0.nodes.0", [], "regions[1].halls[0].nodes[0]", "must be an object, not an array"),
        ("regions", None, "regions", "must be an array, not null"),
    ],
)
def test_a_bad_region_or_hall_is_named_by_its_path(path, value, where, message):
    reasons = reasons_of(changed(small_fleet(), path, value))
    assert message in reasons[where], reasons


CC_NODE = "regions.0.halls.1.nodes.0"  # euw1b-01, H200 in CC mode, declared "tdx"
CC_PATH = "regions[0].halls[1].nodes[0].cpu_tee"


def test_the_cpu_tee_of_a_cc_host_is_declared_and_stored():
    fleet_load(document=small_fleet(), actor=ACTOR)
    assert dict(Node.objects.exclude(cpu_tee="").values_list("hostname", "cpu_tee")) == {"euw1b-01": "tdx"}
    fleet_load(document=changed(small_fleet(), f"{CC_NODE}.cpu_tee", "snp"), actor=ACTOR)
    assert Node.objects.get(hostname="euw1b-01").cpu_tee == "snp"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # A CC-mode host serves confidential VMs only; without its TEE it never could: refused, not loaded dead.
        (f"{CC_NODE}.cpu_tee", DELETE, "must declare its CPU TEE"),
        (f"{CC_NODE}.cpu_tee", None, "must declare its CPU TEE"),
        (f"{CC_NODE}.cpu_tee", "sev", 'must be null, "snp" (AMD SEV-SNP) or "tdx" (Intel TDX), not "sev"'),
        (f"{CC_NODE}.cpu_tee", 1, "not a number"),
    ],
)
def test_a_cc_host_without_a_known_tee_is_refused(path, value, message):
    reasons = reasons_of(changed(small_fleet(), path, value))
    assert message in reasons[CC_PATH], reasons
    assert len(reasons) == 1, reasons


def test_only_a_cc_capable_node_declares_a_tee():
    reasons = reasons_of(changed(small_fleet(), f"{NODE}.cpu_tee", "snp"))
    assert reasons == {f"{NODE_PATH}.cpu_tee": "a CPU TEE is declared only for a cc_capable node"}
    capable = changed(changed(small_fleet(), f"{NODE}.cc_capable", True), f"{NODE}.cpu_tee", "snp")
    assert check(capable)[1] == []


def test_cc_mode_needs_a_model_that_supports_it():
    document = changed(small_fleet(), f"{NODE}.gpu_model", "A100-80GB")
    document = changed(document, f"{NODE}.cc_capable", True)
    document = changed(document, f"{NODE}.cc_mode", True)
    # euw1a-02 shares the NVLink domain with H100s, so it becomes an A100 as well to isolate the CC rule
    document = changed(document, "regions.0.halls.0.nodes.1.gpu_model", "A100-80GB")
    assert reasons_of(document) == {f"{NODE_PATH}.cc_mode": "A100-80GB GPUs do not support confidential computing"}


def test_the_document_must_be_an_object():
    assert reasons_of([]) == {"document": "must be an object, not an array"}
    assert "regions" in reasons_of({})


def test_duplicates_in_the_file_are_refused():
    document = small_fleet()
    document["regions"].append({**document["regions"][1], "halls": []})  # us-east again
    document["regions"][1]["halls"].append({"code": "eu-west-1a", "fenced_for": None, "nodes": []})
    document["regions"][1]["halls"][0]["nodes"].append(node("euw1a-01", "us-east-1a/nvl-0", "H200-141GB"))
    reasons = reasons_of(document)
    assert reasons == {
        "regions[2].code": 'duplicate region code "us-east" (first at regions[1].code)',
        "regions[1].halls[1].code": 'duplicate hall code "eu-west-1a" (first at regions[0].halls[0].code)',
        "regions[1].halls[0].nodes[1].hostname": (
            'duplicate hostname "euw1a-01" (first at regions[0].halls[0].nodes[0].hostname)'
        ),
    }


def test_an_nvlink_domain_stays_in_one_hall_and_one_model():
    document = small_fleet()
    document["regions"][1]["halls"][0]["nodes"].append(node("use1a-02", "eu-west-1a/nvl-0"))
    document["regions"][0]["halls"][0]["nodes"].append(node("euw1a-04", "eu-west-1a/nvl-1", "A100-80GB"))
    reasons = reasons_of(document)
    assert "cannot span halls" in reasons["regions[1].halls[0].nodes[1].nvlink_domain"]
    assert "holds H100-SXM-80GB GPUs" in reasons["regions[0].halls[0].nodes[3].nvlink_domain"]


def test_a_refused_document_writes_nothing():
    bad = changed(small_fleet(), "regions.1.halls.0.nodes.0.gpu_count", 16)
    with pytest.raises(FleetDocumentInvalid) as refused:
        fleet_load(document=bad, actor=ACTOR)
    assert refused.value.errors == {"regions[1].halls[0].nodes[0].gpu_count": ["must be 1 to 8, not 16"]}
    assert refused.value.status == 422
    assert not Region.objects.exists()
    assert not GpuModel.objects.exists()
    assert not AuditEvent.objects.filter(action="fleet.loaded").exists()


def test_a_load_never_moves_a_node_or_a_hall():
    load(small_fleet())
    before = snapshot()
    document = small_fleet()
    moved = document["regions"][0]["halls"][0]["nodes"].pop(0)  # euw1a-01 ...
    document["regions"][1]["halls"][0]["nodes"].append({**moved, "nvlink_domain": "us-east-1a/nvl-9"})  # ... to US
    document["regions"][1]["halls"].append(document["regions"][0]["halls"].pop(1))  # eu-west-1b to us-east

    with pytest.raises(FleetDocumentInvalid) as refused:
        fleet_load(document=document, actor=ACTOR)

    assert refused.value.errors == {
        "regions[1].halls[0].nodes[1].hostname": [
            'node "euw1a-01" is registered in hall "eu-west-1a"; a fleet load does not move nodes between halls'
        ],
        "regions[1].halls[1].code": [
            'hall "eu-west-1b" is registered in region "eu-west"; a fleet load does not move halls between regions'
        ],
    }
    assert snapshot() == before


def test_an_nvlink_domain_is_checked_against_registered_nodes():
    load(small_fleet())
    partial = {"regions": [small_fleet()["regions"][1]]}
    partial["regions"][0]["halls"][0]["nodes"].append(node("use1a-02", "eu-west-1a/nvl-1"))
    with pytest.raises(FleetDocumentInvalid) as refused:
        fleet_load(document=partial, actor=ACTOR)
    assert refused.value.errors == {
        "regions[0].halls[0].nodes[1].nvlink_domain": [
            'NVLink domain "eu-west-1a/nvl-1" is in hall "eu-west-1a" (registered node euw1a-03); '
            "a domain cannot span halls"
        ]
    }


# --- the command --------------------------------------------------------------------------------------------


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """The 1-based line of the ``occurrence``-th line containing ``needle``."""
    hits = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    return hits[occurrence - 1]


def _bad_file(tmp_path: Path) -> tuple[Path, str]:
    document = small_fleet()
    document = changed(document, "regions.0.halls.0.nodes.2.gpu_model", "H800")
    document = changed(document, "regions.1.halls.0.nodes.0.gpu_count", 12)
    document["regions"][1]["halls"][0]["nodes"].append(node("euw1b-01", "us-east-1a/nvl-0", "H200-141GB"))
    text = pretty(document)
    path = tmp_path / "fleet.json"
    path.write_text(text)
    return path, text


def test_the_command_loads_a_file_and_prints_the_counts(tmp_path):
    path = tmp_path / "fleet.json"
    path.write_text(pretty(small_fleet()))
    out = StringIO()
    call_command("fleet_load", str(path), stdout=out)
    assert out.getvalue().splitlines() == [
        f"gpu models: {len(CATALOG)} created, 0 updated, 0 unchanged",
        "regions: 2 created, 0 updated, 0 unchanged",
        "halls: 3 created, 0 updated, 0 unchanged",
        f"nodes: {SMALL_FLEET_NODES} created, 0 updated, 0 unchanged",
        f"gpus: {SMALL_FLEET_GPUS} created, 0 deleted, 0 unchanged",
    ]
    again = StringIO()
    call_command("fleet_load", str(path), stdout=again)
    assert f"nodes: 0 created, 0 updated, {SMALL_FLEET_NODES} unchanged" in again.getvalue()


def test_the_command_refuses_a_bad_file_whole_naming_each_line(tmp_path):
    path, text = _bad_file(tmp_path)
    err = StringIO()

    with pytest.raises(CommandError, match="3 problems; nothing was loaded") as refused:
        call_command("fleet_load", str(path), stderr=err)

    assert refused.value.returncode == 1
    model_line, count_line = _line_of(text, '"H800"'), _line_of(text, '"gpu_count": 12')
    duplicate_line = _line_of(text, '"hostname": "euw1b-01"', occurrence=2)
    known = ", ".join(CATALOG)
    assert err.getvalue().splitlines() == [
        f'{path}:{model_line}: regions[0].halls[0].nodes[2].gpu_model: unknown GPU model "H800"; known: {known}',
        f"{path}:{count_line}: regions[1].halls[0].nodes[0].gpu_count: must be 1 to 8, not 12",
        f"{path}:{duplicate_line}: regions[1].halls[0].nodes[1].hostname: "
        'duplicate hostname "euw1b-01" (first at regions[0].halls[1].nodes[0].hostname)',
    ]
    assert not Node.objects.exists()
    assert not AuditEvent.objects.filter(action="fleet.loaded").exists()


def test_a_missing_key_is_placed_on_its_objects_line(tmp_path):
    document = changed(small_fleet(), "regions.1.halls.0.nodes.0.versions", DELETE)
    text = pretty(document)
    path = tmp_path / "fleet.json"
    path.write_text(text)
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("fleet_load", str(path), stderr=err)
    node_line = _line_of(text, '"hostname": "use1a-01"') - 1  # the node's opening brace
    assert err.getvalue().strip() == f"{path}:{node_line}: regions[1].halls[0].nodes[0].versions: is required"


def test_a_key_written_twice_is_refused(tmp_path):
    text = pretty(small_fleet()).replace('"gpu_count": 4,', '"gpu_count": 4,\n"gpu_count": 7,', 1)
    path = tmp_path / "fleet.json"
    path.write_text(text)
    err = StringIO()
    with pytest.raises(CommandError, match="1 problem;"):
        call_command("fleet_load", str(path), stderr=err)
    line = _line_of(text, '"gpu_count": 7,')
    assert err.getvalue().strip() == (
        f"{path}:{line}: regions[0].halls[0].nodes[2].gpu_count: "
        "this key appears twice in its object; the last one would silently win"
    )


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('{"regions": [\n  {"code": "eu",}\n]}', ":2:", "Expecting property name enclosed in double quotes"),
        ('{"regions": [\n\n  NaN]}', ":3:3:", "NaN is not valid JSON"),
        ("", ":1:1:", "Expecting value"),
    ],
)
def test_a_file_that_is_not_json_names_the_line(tmp_path, text, where, message):
    path = tmp_path / "fleet.json"
    path.write_text(text)
    with pytest.raises(CommandError) as refused:
        call_command("fleet_load", str(path))
    assert str(refused.value).startswith(f"{path}{where}")
    assert "not valid JSON" in str(refused.value)
    assert message in str(refused.value)


def test_a_missing_file_is_a_readable_error(tmp_path):
    with pytest.raises(CommandError, match="cannot read the file"):
        call_command("fleet_load", str(tmp_path / "nowhere.json"))


def test_the_real_command_exits_1_with_a_line_per_reason(tmp_path):
    path, text = _bad_file(tmp_path)
    # The document is refused before the database is touched; an empty SQLite file proves it.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'untouched.sqlite3'}"
    done = subprocess.run(
        [sys.executable, "manage.py", "fleet_load", str(path)],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    model_line, count_line = _line_of(text, '"H800"'), _line_of(text, '"gpu_count": 12')
    assert lines[0].startswith(f"{path}:{model_line}: regions[0].halls[0].nodes[2].gpu_model: ")
    assert lines[1].startswith(f"{path}:{count_line}: ")
    assert lines[-1] == f"CommandError: {path}: The fleet document has 3 problems; nothing was loaded."
    assert done.stdout == ""


# --- where in the file --------------------------------------------------------------------------------------


def test_parse_text_knows_the_line_of_every_value():
    text = '{\n  "regions": [\n    {\n      "code": "a",\n      "halls": []\n    }\n  ]\n}'
    document, source = parse_text(text)
    assert document == json.loads(text)
    assert source.lines[()] == 1
    assert source.lines[("regions",)] == 2
    assert source.lines[("regions", 0)] == 3
    assert source.lines[("regions", 0, "code")] == 4
    assert source.line_of(("regions", 0, "name")) == 3  # missing: its object's line
    assert source.line_of(("regions", 0, "halls", 5, "code")) == 5
    assert source.duplicate_keys == ()


def test_parse_text_handles_escapes_and_nesting():
    text = '{"a\\"b": ["x\\n", {"c": [1, -2.5e3, true, null]}],\n "d": "\\u00e9"}'
    document, source = parse_text(text)
    assert document == {'a"b': ["x\n", {"c": [1, -2500.0, True, None]}], "d": "é"}
    assert source.lines[("d",)] == 2
    assert source.lines[('a"b', 1, "c", 3)] == 1


# --- the demo fleet -----------------------------------------------------------------------------------------


def _seed() -> dict:
    out = StringIO()
    call_command("seed_demo", "--json", "--force", stdout=out)
    return json.loads(out.getvalue())


def test_seed_demo_loads_the_demo_fleet_once():
    first = _seed()["fleet"]
    assert first["regions"]["created"] == 2
    assert first["halls"]["created"] == 3
    assert first["nodes"]["created"] == 14
    assert first["gpus"]["created"] == 112
    assert Hall.objects.get(code="eu-west-1b").fenced_for == "EU"
    assert list(Node.objects.filter(cc_mode=True).values_list("hostname", "gpu_model__name")) == [
        ("eu-west-1b-h200-02", "H200-141GB"),
        ("us-east-1a-h200-06", "H200-141GB"),
    ]
    assert Node.objects.values("nvlink_domain").distinct().count() == 7

    second = _seed()["fleet"]
    assert {kind: counts["created"] + counts.get("updated", 0) for kind, counts in second.items()} == dict.fromkeys(
        second, 0
    )
    assert audit_chain_verify().ok


def test_a_fabric_may_state_the_rate_its_ports_should_train_at():
    nics = [{"device": f"mlx5_{i}", "rail": i, "gpus": [i]} for i in range(8)]
    rdma = {"fabric": "eu-west-1a/ib-0", "link_layer": "infiniband", "rate_gbps": 400, "nics": nics}
    load(changed(small_fleet(), "regions.0.halls.0.nodes.0.rdma", rdma))
    assert Node.objects.get(hostname="euw1a-01").rdma == rdma
    where = "regions[0].halls[0].nodes[0].rdma.rate_gbps"
    for bad in (0, 400.5, "400", True, 5000):
        refused = reasons_of(changed(small_fleet(), "regions.0.halls.0.nodes.0.rdma", rdma | {"rate_gbps": bad}))
        assert refused == {where: f"must be a whole number of Gb/s, 1 to 3200, not {json.dumps(bad)}"}
    without = {key: value for key, value in rdma.items() if key != "rate_gbps"}
    load(changed(small_fleet(), "regions.0.halls.0.nodes.0.rdma", without))
    assert Node.objects.get(hostname="euw1a-01").rdma == without
