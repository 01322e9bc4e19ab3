from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.retention_policy import RetentionPolicy
from ...models.retention_policy_set_request import RetentionPolicySetRequest
from ...types import UNSET, Response, Unset


def _get_kwargs(
    category: str,
    *,
    body: RetentionPolicySetRequest | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/api/v1/retention-policies/{category}".format(
            category=quote(str(category), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
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
    body: RetentionPolicySetRequest | Unset = UNSET,
) -> Response[Problem | RetentionPolicy]:
    """``{"days": N}`` or ``{"zero_retention": true}``.

    Args:
        category (str):
        body (RetentionPolicySetRequest | Unset): Refuses, with 422 ``validation_error``, every
            field of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RetentionPolicy]
    """

    kwargs = _get_kwargs(
        category=category,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    category: str,
    *,
    client: AuthenticatedClient,
    body: RetentionPolicySetRequest | Unset = UNSET,
) -> Problem | RetentionPolicy | None:
    """``{"days": N}`` or ``{"zero_retention": true}``.

    Args:
        category (str):
        body (RetentionPolicySetRequest | Unset): Refuses, with 422 ``validation_error``, every
            field of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RetentionPolicy
    """

    return sync_detailed(
        category=category,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    category: str,
    *,
    client: AuthenticatedClient,
    body: RetentionPolicySetRequest | Unset = UNSET,
) -> Response[Problem | RetentionPolicy]:
    """``{"days": N}`` or ``{"zero_retention": true}``.

    Args:
        category (str):
        body (RetentionPolicySetRequest | Unset): Refuses, with 422 ``validation_error``, every
            field of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RetentionPolicy]
    """

    kwargs = _get_kwargs(
        category=category,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    category: str,
    *,
    client: AuthenticatedClient,
    body: RetentionPolicySetRequest | Unset = UNSET,
) -> Problem | RetentionPolicy | None:
    """``{"days": N}`` or ``{"zero_retention": true}``.

    Args:
        category (str):
        body (RetentionPolicySetRequest | Unset): Refuses, with 422 ``validation_error``, every
            field of the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

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
            body=body,
        )
    ).parsed
