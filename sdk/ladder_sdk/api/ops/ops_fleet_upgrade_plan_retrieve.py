from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.ops_fleet_upgrade_plan_retrieve_response_200 import OpsFleetUpgradePlanRetrieveResponse200
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    max_domains: int | Unset = UNSET,
    max_share: float | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["max_domains"] = max_domains

    params["max_share"] = max_share

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/ops/fleet/upgrade-plan",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> OpsFleetUpgradePlanRetrieveResponse200 | Problem | None:
    if response.status_code == 200:
        response_200 = OpsFleetUpgradePlanRetrieveResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

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


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[OpsFleetUpgradePlanRetrieveResponse200 | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    max_domains: int | Unset = UNSET,
    max_share: float | Unset = UNSET,
) -> Response[OpsFleetUpgradePlanRetrieveResponse200 | Problem]:
    """The rolling upgrade: waves of whole NVLink domains with drifting nodes, emptiest first, each within
    ``max_share`` of the fleet's GPUs (0.1 when neither limit is given) and ``max_domains`` domains,
    with the
    allocations to move or checkpoint first. Only a plan: nothing is drained.

    Args:
        max_domains (int | Unset):
        max_share (float | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[OpsFleetUpgradePlanRetrieveResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        max_domains=max_domains,
        max_share=max_share,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    max_domains: int | Unset = UNSET,
    max_share: float | Unset = UNSET,
) -> OpsFleetUpgradePlanRetrieveResponse200 | Problem | None:
    """The rolling upgrade: waves of whole NVLink domains with drifting nodes, emptiest first, each within
    ``max_share`` of the fleet's GPUs (0.1 when neither limit is given) and ``max_domains`` domains,
    with the
    allocations to move or checkpoint first. Only a plan: nothing is drained.

    Args:
        max_domains (int | Unset):
        max_share (float | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        OpsFleetUpgradePlanRetrieveResponse200 | Problem
    """

    return sync_detailed(
        client=client,
        max_domains=max_domains,
        max_share=max_share,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    max_domains: int | Unset = UNSET,
    max_share: float | Unset = UNSET,
) -> Response[OpsFleetUpgradePlanRetrieveResponse200 | Problem]:
    """The rolling upgrade: waves of whole NVLink domains with drifting nodes, emptiest first, each within
    ``max_share`` of the fleet's GPUs (0.1 when neither limit is given) and ``max_domains`` domains,
    with the
    allocations to move or checkpoint first. Only a plan: nothing is drained.

    Args:
        max_domains (int | Unset):
        max_share (float | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[OpsFleetUpgradePlanRetrieveResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        max_domains=max_domains,
        max_share=max_share,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    max_domains: int | Unset = UNSET,
    max_share: float | Unset = UNSET,
) -> OpsFleetUpgradePlanRetrieveResponse200 | Problem | None:
    """The rolling upgrade: waves of whole NVLink domains with drifting nodes, emptiest first, each within
    ``max_share`` of the fleet's GPUs (0.1 when neither limit is given) and ``max_domains`` domains,
    with the
    allocations to move or checkpoint first. Only a plan: nothing is drained.

    Args:
        max_domains (int | Unset):
        max_share (float | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        OpsFleetUpgradePlanRetrieveResponse200 | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            max_domains=max_domains,
            max_share=max_share,
        )
    ).parsed
