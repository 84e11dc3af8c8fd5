"""The web guard's decisions, request by request (no server needed)."""

from __future__ import annotations

from typing import Any

import pytest

from actoviq.cli.web.security import allowed_hosts, check_request, cookie_name

TOKEN = "t0ken-value"
COOKIE_NAME = cookie_name(TOKEN)
HOSTS = allowed_hosts("127.0.0.1", 8000)


def _scope(method: str = "GET", path: str = "/", query: str = "", **headers: str) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query.encode(),
        "headers": [
            (k.replace("_", "-").lower().encode(), v.encode())
            for k, v in {"host": "127.0.0.1:8000", **headers}.items()
        ],
    }


def test_hosts() -> None:
    assert {"127.0.0.1:8000", "localhost:8000", "[::1]:8000"} == HOSTS
    assert allowed_hosts("192.168.1.5", 80) == {"192.168.1.5:80", "192.168.1.5"}


@pytest.mark.parametrize(
    ("scope", "status", "cookie"),
    [
        (_scope(), 401, False),
        (_scope(query=f"token={TOKEN}"), 0, True),
        (_scope(query="token=wrong"), 401, False),
        (_scope(path="/static/app.js", query=f"token={TOKEN}"), 401, False),
        (_scope(cookie=f"{COOKIE_NAME}={TOKEN}"), 0, False),
        (_scope(path="/static/app.js", cookie=f"{COOKIE_NAME}={TOKEN}"), 0, False),
        (_scope(cookie=f"{COOKIE_NAME}=wrong"), 401, False),
        (_scope(cookie='bad"cookie;;=='), 401, False),
        (_scope(path="/api/info", cookie=f"{COOKIE_NAME}={TOKEN}"), 401, False),
        (_scope(path="/api/info", authorization=f"Bearer {TOKEN}"), 0, False),
        (_scope(path="/api/info", authorization=f"bearer {TOKEN}"), 0, False),
        (_scope(path="/api/info", authorization=f"Basic {TOKEN}"), 401, False),
        (_scope(path="/api/info", host="evil.example:8000"), 421, False),
        (
            _scope(path="/api/info", host="localhost:8000", authorization=f"Bearer {TOKEN}"),
            0,
            False,
        ),
        (
            _scope("POST", "/api/x", authorization=f"Bearer {TOKEN}", content_type="text/plain"),
            415,
            False,
        ),
        (
            _scope(
                "POST",
                "/api/x",
                authorization=f"Bearer {TOKEN}",
                content_type="application/json; charset=utf-8",
                origin="http://127.0.0.1:8000",
                sec_fetch_site="same-origin",
            ),
            0,
            False,
        ),
        (
            _scope(
                "POST",
                "/api/x",
                authorization=f"Bearer {TOKEN}",
                content_type="application/json",
                origin="http://127.0.0.1:9999",
            ),
            403,
            False,
        ),
        (
            _scope(
                "POST",
                "/",
                cookie=f"{COOKIE_NAME}={TOKEN}",
                content_type="application/json",
            ),
            405,
            False,
        ),
    ],
)
def test_decisions(scope: dict[str, Any], status: int, cookie: bool) -> None:
    decision = check_request(scope, TOKEN, HOSTS)
    assert (decision.status, decision.set_cookie) == (status, cookie)


def test_each_server_has_its_own_cookie() -> None:
    other = "another-servers-token"
    assert cookie_name(other) != COOKIE_NAME and TOKEN not in COOKIE_NAME
    both = f"{cookie_name(other)}={other}; {COOKIE_NAME}={TOKEN}"
    assert check_request(_scope(cookie=both), TOKEN, HOSTS).status == 0
    assert check_request(_scope(cookie=both), other, HOSTS).status == 0
    only_other = f"{cookie_name(other)}={other}"
    assert check_request(_scope(cookie=only_other), TOKEN, HOSTS).status == 401
