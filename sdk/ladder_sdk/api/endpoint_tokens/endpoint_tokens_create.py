from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.endpoint_token import EndpointToken
from ...models.endpoint_token_mint_request import EndpointTokenMintRequest
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: EndpointTokenMintRequest | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/endpoint-tokens",
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> EndpointToken | Problem | None:
    if response.status_code == 201:
        response_201 = EndpointToken.from_dict(response.json())

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
) -> Response[EndpointToken | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: EndpointTokenMintRequest | Unset = UNSET,
) -> Response[EndpointToken | Problem]:
    """Endpoint tokens: what callers of your serverless endpoints send, checked by the gateway itself, so a
    running endpoint's calls never reach Ladder. Minted with an API key (not a portal session), read-
    only keys
    included: a token may do what its key may at an endpoint (call it), nothing more.

    Args:
        body (EndpointTokenMintRequest | Unset): Refuses, with 422 ``validation_error``, every
            field of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EndpointToken | Problem]
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
    body: EndpointTokenMintRequest | Unset = UNSET,
) -> EndpointToken | Problem | None:
    """Endpoint tokens: what callers of your serverless endpoints send, checked by the gateway itself, so a
    running endpoint's calls never reach Ladder. Minted with an API key (not a portal session), read-
    only keys
    included: a token may do what its key may at an endpoint (call it), nothing more.

    Args:
        body (EndpointTokenMintRequest | Unset): Refuses, with 422 ``validation_error``, every
            field of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EndpointToken | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: EndpointTokenMintRequest | Unset = UNSET,
) -> Response[EndpointToken | Problem]:
    """Endpoint tokens: what callers of your serverless endpoints send, checked by the gateway itself, so a
    running endpoint's calls never reach Ladder. Minted with an API key (not a portal session), read-
    only keys
    included: a token may do what its key may at an endpoint (call it), nothing more.

    Args:
        body (EndpointTokenMintRequest | Unset): Refuses, with 422 ``validation_error``, every
            field of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EndpointToken | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: EndpointTokenMintRequest | Unset = UNSET,
) -> EndpointToken | Problem | None:
    """Endpoint tokens: what callers of your serverless endpoints send, checked by the gateway itself, so a
    running endpoint's calls never reach Ladder. Minted with an API key (not a portal session), read-
    only keys
    included: a token may do what its key may at an endpoint (call it), nothing more.

    Args:
        body (EndpointTokenMintRequest | Unset): Refuses, with 422 ``validation_error``, every
            field of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EndpointToken | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
