from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.storage_cost_basis import StorageCostBasis
from ...models.storage_cost_basis_request_request import StorageCostBasisRequestRequest
from ...types import Response


def _get_kwargs(
    *,
    body: StorageCostBasisRequestRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/ops/storage-cost-basis",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | StorageCostBasis | None:
    if response.status_code == 201:
        response_201 = StorageCostBasis.from_dict(response.json())

        return response_201

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
) -> Response[Problem | StorageCostBasis]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: StorageCostBasisRequestRequest,
) -> Response[Problem | StorageCostBasis]:
    """The storage cost book: what a provisioned GB of each storage kind in each region costs per GB-month
    from a
    date on (disks and their replicas, servers, power, space). Added, never edited; the latest in force
    applies.

    Args:
        body (StorageCostBasisRequestRequest): Refuses, with 422 ``validation_error``, every field
            of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StorageCostBasis]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: StorageCostBasisRequestRequest,
) -> Problem | StorageCostBasis | None:
    """The storage cost book: what a provisioned GB of each storage kind in each region costs per GB-month
    from a
    date on (disks and their replicas, servers, power, space). Added, never edited; the latest in force
    applies.

    Args:
        body (StorageCostBasisRequestRequest): Refuses, with 422 ``validation_error``, every field
            of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StorageCostBasis
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: StorageCostBasisRequestRequest,
) -> Response[Problem | StorageCostBasis]:
    """The storage cost book: what a provisioned GB of each storage kind in each region costs per GB-month
    from a
    date on (disks and their replicas, servers, power, space). Added, never edited; the latest in force
    applies.

    Args:
        body (StorageCostBasisRequestRequest): Refuses, with 422 ``validation_error``, every field
            of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StorageCostBasis]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: StorageCostBasisRequestRequest,
) -> Problem | StorageCostBasis | None:
    """The storage cost book: what a provisioned GB of each storage kind in each region costs per GB-month
    from a
    date on (disks and their replicas, servers, power, space). Added, never edited; the latest in force
    applies.

    Args:
        body (StorageCostBasisRequestRequest): Refuses, with 422 ``validation_error``, every field
            of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StorageCostBasis
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
