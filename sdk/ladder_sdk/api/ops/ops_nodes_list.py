from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.node_state_enum import NodeStateEnum
from ...models.paginated_node_list import PaginatedNodeList
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    cursor: str | Unset = UNSET,
    gpu_model: str | Unset = UNSET,
    hall: str | Unset = UNSET,
    nvlink_domain: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: NodeStateEnum | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["cursor"] = cursor

    params["gpu_model"] = gpu_model

    params["hall"] = hall

    params["nvlink_domain"] = nvlink_domain

    params["page_size"] = page_size

    params["region"] = region

    json_state: str | Unset = UNSET
    if not isinstance(state, Unset):
        json_state = state.value

    params["state"] = json_state

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/ops/nodes",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PaginatedNodeList | Problem | None:
    if response.status_code == 200:
        response_200 = PaginatedNodeList.from_dict(response.json())

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
) -> Response[PaginatedNodeList | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    gpu_model: str | Unset = UNSET,
    hall: str | Unset = UNSET,
    nvlink_domain: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: NodeStateEnum | Unset = UNSET,
) -> Response[PaginatedNodeList | Problem]:
    """
    Args:
        cursor (str | Unset):
        gpu_model (str | Unset):
        hall (str | Unset):
        nvlink_domain (str | Unset):
        page_size (int | Unset):
        region (str | Unset):
        state (NodeStateEnum | Unset): * `registering` - Registering
            * `ready` - Ready
            * `draining` - Draining
            * `quarantined` - Quarantined
            * `sanitizing` - Sanitizing
            * `maintenance` - Maintenance
            * `failed` - Failed

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PaginatedNodeList | Problem]
    """

    kwargs = _get_kwargs(
        cursor=cursor,
        gpu_model=gpu_model,
        hall=hall,
        nvlink_domain=nvlink_domain,
        page_size=page_size,
        region=region,
        state=state,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    gpu_model: str | Unset = UNSET,
    hall: str | Unset = UNSET,
    nvlink_domain: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: NodeStateEnum | Unset = UNSET,
) -> PaginatedNodeList | Problem | None:
    """
    Args:
        cursor (str | Unset):
        gpu_model (str | Unset):
        hall (str | Unset):
        nvlink_domain (str | Unset):
        page_size (int | Unset):
        region (str | Unset):
        state (NodeStateEnum | Unset): * `registering` - Registering
            * `ready` - Ready
            * `draining` - Draining
            * `quarantined` - Quarantined
            * `sanitizing` - Sanitizing
            * `maintenance` - Maintenance
            * `failed` - Failed

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PaginatedNodeList | Problem
    """

    return sync_detailed(
        client=client,
        cursor=cursor,
        gpu_model=gpu_model,
        hall=hall,
        nvlink_domain=nvlink_domain,
        page_size=page_size,
        region=region,
        state=state,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    gpu_model: str | Unset = UNSET,
    hall: str | Unset = UNSET,
    nvlink_domain: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: NodeStateEnum | Unset = UNSET,
) -> Response[PaginatedNodeList | Problem]:
    """
    Args:
        cursor (str | Unset):
        gpu_model (str | Unset):
        hall (str | Unset):
        nvlink_domain (str | Unset):
        page_size (int | Unset):
        region (str | Unset):
        state (NodeStateEnum | Unset): * `registering` - Registering
            * `ready` - Ready
            * `draining` - Draining
            * `quarantined` - Quarantined
            * `sanitizing` - Sanitizing
            * `maintenance` - Maintenance
            * `failed` - Failed

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PaginatedNodeList | Problem]
    """

    kwargs = _get_kwargs(
        cursor=cursor,
        gpu_model=gpu_model,
        hall=hall,
        nvlink_domain=nvlink_domain,
        page_size=page_size,
        region=region,
        state=state,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    gpu_model: str | Unset = UNSET,
    hall: str | Unset = UNSET,
    nvlink_domain: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: NodeStateEnum | Unset = UNSET,
) -> PaginatedNodeList | Problem | None:
    """
    Args:
        cursor (str | Unset):
        gpu_model (str | Unset):
        hall (str | Unset):
        nvlink_domain (str | Unset):
        page_size (int | Unset):
        region (str | Unset):
        state (NodeStateEnum | Unset): * `registering` - Registering
            * `ready` - Ready
            * `draining` - Draining
            * `quarantined` - Quarantined
            * `sanitizing` - Sanitizing
            * `maintenance` - Maintenance
            * `failed` - Failed

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PaginatedNodeList | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            cursor=cursor,
            gpu_model=gpu_model,
            hall=hall,
            nvlink_domain=nvlink_domain,
            page_size=page_size,
            region=region,
            state=state,
        )
    ).parsed
