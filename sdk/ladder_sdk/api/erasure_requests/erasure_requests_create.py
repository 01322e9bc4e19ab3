from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.erasure_request import ErasureRequest
from ...models.erasure_request_create_request import ErasureRequestCreateRequest
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: ErasureRequestCreateRequest | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/erasure-requests",
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErasureRequest | Problem | None:
    if response.status_code == 201:
        response_201 = ErasureRequest.from_dict(response.json())

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
) -> Response[ErasureRequest | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: ErasureRequestCreateRequest | Unset = UNSET,
) -> Response[ErasureRequest | Problem]:
    """Erase now what no legal hold preserves (crypto-shredding after the waiting period), withhold the
    rest
    until its holds are released, and name the assets derived from erased data.

    Args:
        body (ErasureRequestCreateRequest | Unset): Name the assets, or categories and/or a
            creation date range (both: the named assets among those).
            Compliance staff name the tenant and the data subject (``on_behalf_of``); a tenant's owner
            erases its own
            tenant's data (another tenant's slug answers as an unknown one).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErasureRequest | Problem]
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
    body: ErasureRequestCreateRequest | Unset = UNSET,
) -> ErasureRequest | Problem | None:
    """Erase now what no legal hold preserves (crypto-shredding after the waiting period), withhold the
    rest
    until its holds are released, and name the assets derived from erased data.

    Args:
        body (ErasureRequestCreateRequest | Unset): Name the assets, or categories and/or a
            creation date range (both: the named assets among those).
            Compliance staff name the tenant and the data subject (``on_behalf_of``); a tenant's owner
            erases its own
            tenant's data (another tenant's slug answers as an unknown one).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErasureRequest | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: ErasureRequestCreateRequest | Unset = UNSET,
) -> Response[ErasureRequest | Problem]:
    """Erase now what no legal hold preserves (crypto-shredding after the waiting period), withhold the
    rest
    until its holds are released, and name the assets derived from erased data.

    Args:
        body (ErasureRequestCreateRequest | Unset): Name the assets, or categories and/or a
            creation date range (both: the named assets among those).
            Compliance staff name the tenant and the data subject (``on_behalf_of``); a tenant's owner
            erases its own
            tenant's data (another tenant's slug answers as an unknown one).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErasureRequest | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: ErasureRequestCreateRequest | Unset = UNSET,
) -> ErasureRequest | Problem | None:
    """Erase now what no legal hold preserves (crypto-shredding after the waiting period), withhold the
    rest
    until its holds are released, and name the assets derived from erased data.

    Args:
        body (ErasureRequestCreateRequest | Unset): Name the assets, or categories and/or a
            creation date range (both: the named assets among those).
            Compliance staff name the tenant and the data subject (``on_behalf_of``); a tenant's owner
            erases its own
            tenant's data (another tenant's slug answers as an unknown one).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErasureRequest | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
