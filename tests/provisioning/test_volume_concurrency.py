"""A block volume takes one attachment even when many requests for it race: the placement section serializes them
and each locks the volumes it mounts, so exactly one wins and the others are refused 409 ``volume_in_use``; a
delete racing them never deletes a volume work mounts."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from core.errors import ServiceError
from lifecycle.services.volumes import volume_create, volume_delete
from provisioning.domain.workloads import Volume as Mount
from provisioning.domain.workloads import Workload
from provisioning.models import Region, Volume, VolumeAttachment
from provisioning.services.fleet import fleet_load
from provisioning.services.placing import AllocationSpec, allocation_request
from tests.support import SYSTEM
from tests.support.fleet_documents import small_fleet

H100 = "H100-SXM-80GB"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_racers_for_one_block_volume_and_a_delete_leave_one_holder_and_no_deleted_mounted_volume(acme: Any) -> None:
    fleet_load(document=small_fleet(), actor=SYSTEM)
    disk = volume_create(
        tenant=acme, name="disk", region=Region.objects.get(code="eu-west"), kind="block", size_gb=10, actor=SYSTEM
    )
    Volume.objects.filter(pk=disk.pk).update(state="available")  # the backend has it (its task ran elsewhere)
    workload = Workload(os_image="ubuntu-24.04", volumes=(Mount("/mnt/disk", volume=disk.pk),))
    spec = AllocationSpec(rung="vm", gpu_models=(H100,), gpus=1, regions=("eu-west",))
    results: list[str] = []
    start = threading.Barrier(9)

    def place(i: int) -> None:
        try:
            start.wait()
            allocation_request(tenant=acme, name=f"vm-{i}", spec=spec, actor=SYSTEM, workload=workload)
            results.append("granted")
        except ServiceError as refused:
            results.append(refused.code)
        except Exception as error:  # anything else (a deadlock, a lost update) fails the test by name
            results.append(f"{type(error).__name__}: {error}")
        finally:
            connection.close()

    def delete() -> None:
        try:
            start.wait()
            volume_delete(volume=disk, actor=SYSTEM)
            results.append("deleted")
        except ServiceError as refused:
            results.append(refused.code)
        except Exception as error:
            results.append(type(error).__name__)
        finally:
            connection.close()

    threads = [threading.Thread(target=place, args=(i,)) for i in range(8)] + [threading.Thread(target=delete)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 9, results
    holders = VolumeAttachment.objects.filter(volume=disk, released_at=None).count()
    state = Volume.objects.get(pk=disk.pk).state
    if "deleted" in results:  # the delete went first: nothing could mount it after
        assert (holders, results.count("granted"), state) == (0, 0, "deleting")
        assert sorted(set(results)) == ["deleted", "volume_state"], results
    else:
        assert (holders, results.count("granted"), state) == (1, 1, "attached")
        assert sorted(set(results)) == ["granted", "volume_in_use"], results
