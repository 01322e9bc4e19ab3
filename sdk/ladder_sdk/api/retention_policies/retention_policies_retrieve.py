from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.retention_policy import RetentionPolicy
from ...types import Response


def _get_kwargs(
    category: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/retention-policies/{category}".format(
            category=quote(str(category), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | RetentionPolicy | None:
    if response.status_code == 200:
        response_200 = RetentionPolicy.from_dict(response.json())

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

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | RetentionPolicy]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    category: str,
    *,
    client: AuthenticatedClient,
) -> Response[Problem | RetentionPolicy]:
    """One category's retention; the owner sets it (a shorter rule applies to existing data at the next
    sweep).

    Args:
        category (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RetentionPolicy]
    """

    kwargs = _get_kwargs(
        category=category,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    category: str,
    *,
    client: AuthenticatedClient,
) -> Problem | RetentionPolicy | None:
    """One category's retention; the owner sets it (a shorter rule applies to existing data at the next
    sweep).

    Args:
        category (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RetentionPolicy
    """

    return sync_detailed(
        category=category,
        client=client,
    ).parsed


async def asyncio_detailed(
    category: str,
    *,
    client: AuthenticatedClient,
) -> Response[Problem | RetentionPolicy]:
    """One category's retention; the owner sets it (a shorter rule applies to existing data at the next
    sweep).

    Args:
        category (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RetentionPolicy]
    """

    kwargs = _get_kwargs(
        category=category,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    category: str,
    *,
    client: AuthenticatedClient,
) -> Problem | RetentionPolicy | None:
    """One category's retention; the owner sets it (a shorter rule applies to existing data at the next
    sweep).

    Args:
        category (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RetentionPolicy
    """

    return (
        await asyncio_detailed(
            category=category,
            client=client,
        )
    ).parsed
