"""Asking vCPUs and memory per member through /api/v1/allocations (docs/api.md, "CPU and memory"): taken, shown and
billed beyond the bundle; refused with the field named beyond four times the bundle, below one, on bare metal, or
where the region does not price them."""

import pytest

from billing.models import Unit, UsageInterval
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM, assert_problem
from tests.support.billing import host_price
from tests.support.fleet_documents import small_fleet

URL = "/api/v1/allocations"
H100 = "H100-SXM-80GB"


@pytest.fixture
def fleet(db):
    return fleet_load(document=small_fleet(), actor=SYSTEM)


def ask(client, **body):
    body = {"name": "work", "rung": "container", "gpu_model": H100, **body}
    return client.post(URL, body, format="json")


def test_asked_vcpus_and_memory_are_taken_shown_and_billed_beyond_the_bundle(
    api, alice, fleet, django_capture_on_commit_callbacks, settings
):
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    host_price("0.02", unit=Unit.VCPU)
    host_price("0.004", unit=Unit.MEMORY)
    with django_capture_on_commit_callbacks(execute=True):
        response = ask(api(alice), gpus=2, cpu=24, memory_gib=96)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["cpu"], body["memory_gib"]) == ("24", "96")
    assert (body["cpu_beyond_bundle"], body["memory_gib_beyond_bundle"]) == ("8", "0")  # what the meters count
    shown = api(alice).get(f"{URL}/{body['id']}").json()
    assert (shown["cpu"], shown["state"]) == ("24", "running")  # the simulated provisioner: billed from now
    assert (shown["cpu_beyond_bundle"], shown["memory_gib_beyond_bundle"]) == ("8", "0")
    assert sorted(UsageInterval.objects.filter(end_ms=None).values_list("sku__code", "units_milli")) == [
        ("container/H100-SXM-80GB/gpu/eu-west", 2000),
        ("host/vcpu/eu-west", 8000),  # 24 asked, 16 sold with two GPUs
    ]  # 96 GiB is within the 128 GiB bundle


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"gpus": 2, "cpu": 65}, "cpu", "1 to 64 vCPUs (4 times the 16"),
        ({"gpus": 1, "memory_gib": 257}, "memory_gib", "1 to 256 GiB of memory"),
        ({"mig_profile": "1g.10gb", "cpu": 9}, "cpu", "1 to 8 vCPUs"),
        ({"gpus": 1, "cpu": 0}, "cpu", "greater than or equal to 1"),
        ({"gpus": 1, "cpu": "many"}, "cpu", "valid integer"),
        ({"rung": "bare_metal", "nodes": 1, "memory_gib": 64}, "memory_gib", "takes whole hosts"),
    ],
)
def test_what_cannot_be_asked_is_refused_naming_the_field(api, alice, fleet, body, field, words):
    problem = assert_problem(ask(api(alice), **body), 422, "validation_error")
    assert words in " ".join(problem["errors"][field])


def test_beyond_the_bundle_where_nothing_prices_it_is_not_priced(api, alice, fleet):
    problem = assert_problem(ask(api(alice), gpus=1, cpu=12), 409, "not_priced")
    assert problem["sku"] == "host/vcpu/eu-west"
    assert ask(api(alice), gpus=1, cpu=8).status_code == 201  # the bundle is the GPU's price


def test_offerings_say_what_each_gpu_is_sold_with_and_the_price_of_more(api, fleet):
    host_price("0.02", unit=Unit.VCPU)
    rows = api().get("/api/v1/offerings").json()
    container = next(r for r in rows if (r["rung"], r["gpu_model"], r["region"]) == ("container", H100, "eu-west"))
    assert container["host"] == {
        "cpu_per_gpu": 8,
        "memory_gib_per_gpu": 64,
        "cpu_per_slice": 2,
        "memory_gib_per_slice": 16,
        "most_times": 4,
        "prices": {"vcpu": "0.020000"},  # memory beyond the bundle is not sold in eu-west yet
    }
    vm = next(r for r in rows if (r["rung"], r["gpu_model"]) == ("vm", H100))
    assert vm["host"]["memory_gib_per_gpu"] == 160  # twice the GPU's memory
    assert next(r for r in rows if r["rung"] == "bare_metal")["host"] is None
