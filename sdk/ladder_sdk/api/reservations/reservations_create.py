from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.reservation import Reservation
from ...models.reservation_request_request import ReservationRequestRequest
from ...types import Response


def _get_kwargs(
    *,
    body: ReservationRequestRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/reservations",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Reservation | None:
    if response.status_code == 201:
        response_201 = Reservation.from_dict(response.json())

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
) -> Response[Problem | Reservation]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: ReservationRequestRequest,
) -> Response[Problem | Reservation]:
    """Keep whole GPUs of a model in a hall for a tenant over a term (422 for a term, count or hall that is
    not
    one; 409 ``no_capacity`` when the pool cannot keep them). An operator names the tenant and the
    price; a
    tenant's owner or admin orders one for its own tenant within limits, priced by the book (409
    ``reservation_limit`` over them; docs/capacity.md, "Ordering one").

    Args:
        body (ReservationRequestRequest): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Reservation]
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
    body: ReservationRequestRequest,
) -> Problem | Reservation | None:
    """Keep whole GPUs of a model in a hall for a tenant over a term (422 for a term, count or hall that is
    not
    one; 409 ``no_capacity`` when the pool cannot keep them). An operator names the tenant and the
    price; a
    tenant's owner or admin orders one for its own tenant within limits, priced by the book (409
    ``reservation_limit`` over them; docs/capacity.md, "Ordering one").

    Args:
        body (ReservationRequestRequest): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Reservation
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: ReservationRequestRequest,
) -> Response[Problem | Reservation]:
    """Keep whole GPUs of a model in a hall for a tenant over a term (422 for a term, count or hall that is
    not
    one; 409 ``no_capacity`` when the pool cannot keep them). An operator names the tenant and the
    price; a
    tenant's owner or admin orders one for its own tenant within limits, priced by the book (409
    ``reservation_limit`` over them; docs/capacity.md, "Ordering one").

    Args:
        body (ReservationRequestRequest): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Reservation]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: ReservationRequestRequest,
) -> Problem | Reservation | None:
    """Keep whole GPUs of a model in a hall for a tenant over a term (422 for a term, count or hall that is
    not
    one; 409 ``no_capacity`` when the pool cannot keep them). An operator names the tenant and the
    price; a
    tenant's owner or admin orders one for its own tenant within limits, priced by the book (409
    ``reservation_limit`` over them; docs/capacity.md, "Ordering one").

    Args:
        body (ReservationRequestRequest): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Reservation
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
