from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.defragment_plan import DefragmentPlan
from ...models.defragment_request_request import DefragmentRequestRequest
from ...models.defragment_run import DefragmentRun
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    *,
    body: DefragmentRequestRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/ops/defragment",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DefragmentPlan | DefragmentRun | Problem | None:
    if response.status_code == 200:
        response_200 = DefragmentPlan.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = DefragmentRun.from_dict(response.json())

        return response_202

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
) -> Response[DefragmentPlan | DefragmentRun | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: DefragmentRequestRequest,
) -> Response[DefragmentPlan | DefragmentRun | Problem]:
    """Plan a defragmentation (``dry_run: true``) or carry one out (``dry_run: false``: 202 with the run;
    follow it
    at ``/api/v1/ops/defragment/{id}``). Moves only running jobs and serverless endpoints: see
    provisioning/services/defragment.py.

    Args:
        body (DefragmentRequestRequest): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DefragmentPlan | DefragmentRun | Problem]
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
    body: DefragmentRequestRequest,
) -> DefragmentPlan | DefragmentRun | Problem | None:
    """Plan a defragmentation (``dry_run: true``) or carry one out (``dry_run: false``: 202 with the run;
    follow it
    at ``/api/v1/ops/defragment/{id}``). Moves only running jobs and serverless endpoints: see
    provisioning/services/defragment.py.

    Args:
        body (DefragmentRequestRequest): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DefragmentPlan | DefragmentRun | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: DefragmentRequestRequest,
) -> Response[DefragmentPlan | DefragmentRun | Problem]:
    """Plan a defragmentation (``dry_run: true``) or carry one out (``dry_run: false``: 202 with the run;
    follow it
    at ``/api/v1/ops/defragment/{id}``). Moves only running jobs and serverless endpoints: see
    provisioning/services/defragment.py.

    Args:
        body (DefragmentRequestRequest): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DefragmentPlan | DefragmentRun | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: DefragmentRequestRequest,
) -> DefragmentPlan | DefragmentRun | Problem | None:
    """Plan a defragmentation (``dry_run: true``) or carry one out (``dry_run: false``: 202 with the run;
    follow it
    at ``/api/v1/ops/defragment/{id}``). Moves only running jobs and serverless endpoints: see
    provisioning/services/defragment.py.

    Args:
        body (DefragmentRequestRequest): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DefragmentPlan | DefragmentRun | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
