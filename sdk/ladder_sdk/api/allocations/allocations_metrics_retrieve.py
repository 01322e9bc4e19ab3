import datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.metrics import Metrics
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: int,
    *,
    from_: datetime.datetime | Unset = UNSET,
    step: int | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_from_: str | Unset = UNSET
    if not isinstance(from_, Unset):
        json_from_ = from_.isoformat()
    params["from"] = json_from_

    params["step"] = step

    json_to: str | Unset = UNSET
    if not isinstance(to, Unset):
        json_to = to.isoformat()
    params["to"] = json_to

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/allocations/{id}/metrics".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Metrics | Problem | None:
    if response.status_code == 200:
        response_200 = Metrics.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Metrics | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    step: int | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> Response[Metrics | Problem]:
    """What the allocation's GPUs did: SM active, tensor active and DRAM active (ratios of cycles), memory
    used,
    the most one device used, and total (MiB), power (W) and temperature (C), combined and, up to 16
    devices,
    per device, from NVIDIA's dcgm-exporter through Prometheus, with findings in words ("idle for 47 of
    the last
    60 minutes"). Only the devices the allocation held, while it held them. At a step of five minutes or
    more
    the points are the allocation's five-minute rollups where Prometheus records them (`resolution`). A
    MIG
    slice has no power or temperature of its own (its GPU's are shared with the other instances); a soft
    share
    reads its GPU's totals (scope `gpu`).

    Args:
        id (int):
        from_ (datetime.datetime | Unset):
        step (int | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Metrics | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        from_=from_,
        step=step,
        to=to,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    step: int | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> Metrics | Problem | None:
    """What the allocation's GPUs did: SM active, tensor active and DRAM active (ratios of cycles), memory
    used,
    the most one device used, and total (MiB), power (W) and temperature (C), combined and, up to 16
    devices,
    per device, from NVIDIA's dcgm-exporter through Prometheus, with findings in words ("idle for 47 of
    the last
    60 minutes"). Only the devices the allocation held, while it held them. At a step of five minutes or
    more
    the points are the allocation's five-minute rollups where Prometheus records them (`resolution`). A
    MIG
    slice has no power or temperature of its own (its GPU's are shared with the other instances); a soft
    share
    reads its GPU's totals (scope `gpu`).

    Args:
        id (int):
        from_ (datetime.datetime | Unset):
        step (int | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Metrics | Problem
    """

    return sync_detailed(
        id=id,
        client=client,
        from_=from_,
        step=step,
        to=to,
    ).parsed


async def asyncio_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    step: int | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> Response[Metrics | Problem]:
    """What the allocation's GPUs did: SM active, tensor active and DRAM active (ratios of cycles), memory
    used,
    the most one device used, and total (MiB), power (W) and temperature (C), combined and, up to 16
    devices,
    per device, from NVIDIA's dcgm-exporter through Prometheus, with findings in words ("idle for 47 of
    the last
    60 minutes"). Only the devices the allocation held, while it held them. At a step of five minutes or
    more
    the points are the allocation's five-minute rollups where Prometheus records them (`resolution`). A
    MIG
    slice has no power or temperature of its own (its GPU's are shared with the other instances); a soft
    share
    reads its GPU's totals (scope `gpu`).

    Args:
        id (int):
        from_ (datetime.datetime | Unset):
        step (int | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Metrics | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        from_=from_,
        step=step,
        to=to,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    step: int | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> Metrics | Problem | None:
    """What the allocation's GPUs did: SM active, tensor active and DRAM active (ratios of cycles), memory
    used,
    the most one device used, and total (MiB), power (W) and temperature (C), combined and, up to 16
    devices,
    per device, from NVIDIA's dcgm-exporter through Prometheus, with findings in words ("idle for 47 of
    the last
    60 minutes"). Only the devices the allocation held, while it held them. At a step of five minutes or
    more
    the points are the allocation's five-minute rollups where Prometheus records them (`resolution`). A
    MIG
    slice has no power or temperature of its own (its GPU's are shared with the other instances); a soft
    share
    reads its GPU's totals (scope `gpu`).

    Args:
        id (int):
        from_ (datetime.datetime | Unset):
        step (int | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Metrics | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            from_=from_,
            step=step,
            to=to,
        )
    ).parsed
