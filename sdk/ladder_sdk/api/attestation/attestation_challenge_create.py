from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.challenge import Challenge
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    allocation_id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/attestation/{allocation_id}/challenge".format(
            allocation_id=quote(str(allocation_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Challenge | Problem | None:
    if response.status_code == 200:
        response_200 = Challenge.from_dict(response.json())

        return response_200

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Challenge | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    allocation_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[Challenge | Problem]:
    """A fresh nonce for the guest's next evidence (409 ``too_many_challenges`` when eight are open).

    Args:
        allocation_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Challenge | Problem]
    """

    kwargs = _get_kwargs(
        allocation_id=allocation_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    allocation_id: int,
    *,
    client: AuthenticatedClient,
) -> Challenge | Problem | None:
    """A fresh nonce for the guest's next evidence (409 ``too_many_challenges`` when eight are open).

    Args:
        allocation_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Challenge | Problem
    """

    return sync_detailed(
        allocation_id=allocation_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    allocation_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[Challenge | Problem]:
    """A fresh nonce for the guest's next evidence (409 ``too_many_challenges`` when eight are open).

    Args:
        allocation_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Challenge | Problem]
    """

    kwargs = _get_kwargs(
        allocation_id=allocation_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    allocation_id: int,
    *,
    client: AuthenticatedClient,
) -> Challenge | Problem | None:
    """A fresh nonce for the guest's next evidence (409 ``too_many_challenges`` when eight are open).

    Args:
        allocation_id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Challenge | Problem
    """

    return (
        await asyncio_detailed(
            allocation_id=allocation_id,
            client=client,
        )
    ).parsed
