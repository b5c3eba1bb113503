"""A homeserver's refusal as the channel reads it: the Matrix error code, and a 429's
wait from ``retry_after_ms``, else from ``Retry-After`` (a proxy in front of the
homeserver may give only the header)."""

from __future__ import annotations

import httpx2
import pytest

from thalos_bot_matrix.client import refusal_of


@pytest.mark.parametrize(
    ("status", "body", "headers", "wait"),
    [
        (429, {"errcode": "M_LIMIT_EXCEEDED", "retry_after_ms": 1500}, {"Retry-After": "9"}, 1.5),
        (429, {"errcode": "M_LIMIT_EXCEEDED"}, {"Retry-After": "3"}, 3.0),
        (429, {"errcode": "M_LIMIT_EXCEEDED", "retry_after_ms": -5}, {"Retry-After": "-2"}, 0.0),
        (429, {"errcode": "M_LIMIT_EXCEEDED"}, {"Retry-After": "soon"}, None),
        (403, {"errcode": "M_FORBIDDEN"}, {"Retry-After": "3"}, None),
    ],
)
def test_a_refusals_code_and_wait(
    status: int, body: dict[str, object], headers: dict[str, str], wait: float | None
) -> None:
    refused = refusal_of(httpx2.Response(status, json=body, headers=headers))
    assert refused.errcode == body["errcode"]
    assert refused.retry_after == wait


def test_an_answer_without_a_matrix_body_is_named_by_its_status() -> None:
    refused = refusal_of(httpx2.Response(502, text="<html>Bad Gateway</html>"))
    assert str(refused) == "502 HTTP_502"
    assert refused.retry_after is None
