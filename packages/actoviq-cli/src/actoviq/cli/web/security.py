"""The web page's guard: a secret token on every request, CSRF and DNS-rebinding defences.

* Every request needs the token printed by ``actoviq serve``: the page (``GET /``) takes it once
  as ``?token=`` and answers with an ``HttpOnly; SameSite=Strict`` cookie (named per server, see
  :func:`cookie_name`) and a redirect that drops it from the address bar; the page and its
  assets are then served on the cookie.
* ``/api/*`` requires the token in a header (``Authorization: Bearer …``), which the page reads
  from its own ``<meta>``: a cookie alone is never enough to act, so a cross-site form or
  script cannot (classic CSRF needs the browser to add the credential by itself).
* ``POST`` needs ``Content-Type: application/json`` and, when the browser says where the request
  comes from (``Origin``, ``Sec-Fetch-Site``), the page's own origin.
* ``Host`` must name the bound address (or ``localhost``): a DNS-rebinding page gets 421.
* Tokens are compared in constant time; answers carry a strict CSP (no inline script, nothing
  from another origin), ``nosniff``, ``no-referrer`` and ``no-store``.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from http.cookies import SimpleCookie
from typing import Any, Final
from urllib.parse import parse_qs

__all__ = [
    "SECURITY_HEADERS",
    "AccessDecision",
    "allowed_hosts",
    "check_request",
    "cookie_name",
]

SECURITY_HEADERS: Final[tuple[tuple[bytes, bytes], ...]] = (
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        b"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
)


def cookie_name(token: str) -> str:
    """The page cookie's name for the server holding ``token``.

    Cookies are not kept apart by port: with one fixed name, a second ``actoviq serve`` on the
    same machine would overwrite the first one's cookie and lock its page out. The name carries
    a digest of the token (never the token), so each server has its own.
    """
    import hashlib

    return "actoviq_" + hashlib.sha256(token.encode()).hexdigest()[:12]


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """``Host`` header values that name this server."""
    names = (
        {host, "localhost", "127.0.0.1", "[::1]"}
        if host in ("127.0.0.1", "::1", "localhost")
        else {host}
    )
    return frozenset({f"{name}:{port}" for name in names} | ({*names} if port == 80 else set()))


class AccessDecision:
    """The guard's verdict: ``status`` 0 lets the request through."""

    __slots__ = ("message", "set_cookie", "status")

    def __init__(self, status: int = 0, message: str = "", *, set_cookie: bool = False) -> None:
        self.status = status
        self.message = message
        self.set_cookie = set_cookie


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    return {
        key.decode("latin-1").lower(): value.decode("latin-1")
        for key, value in scope.get("headers", [])
    }


def _same(token: str, candidate: str | None) -> bool:
    return candidate is not None and hmac.compare_digest(token.encode(), candidate.encode())


def _cookie(headers: dict[str, str], name: str) -> str | None:
    raw = headers.get("cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:  # a malformed cookie header is no credential
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization", "")
    scheme, _, credential = value.partition(" ")
    return credential.strip() if scheme.lower() == "bearer" else None


def check_request(scope: dict[str, Any], token: str, hosts: Iterable[str]) -> AccessDecision:
    """Decide whether an HTTP request may reach the app (see the module docstring)."""
    headers = _headers(scope)
    if headers.get("host", "") not in set(hosts):
        return AccessDecision(421, "Unknown host.")
    method = scope.get("method", "GET")
    path: str = scope.get("path", "/")
    if method == "POST":
        if headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return AccessDecision(415, "POST bodies must be application/json.")
        origin = headers.get("origin")
        if origin is not None and origin.removeprefix("http://") != headers.get("host"):
            return AccessDecision(403, "Cross-origin request refused.")
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return AccessDecision(403, "Cross-site request refused.")
    if path.startswith("/api/"):
        if _same(token, _bearer(headers)):
            return AccessDecision()
        return AccessDecision(401, "Missing or wrong token (Authorization: Bearer <token>).")
    if method not in ("GET", "HEAD"):
        return AccessDecision(405, "Method not allowed.")
    if _same(token, _cookie(headers, cookie_name(token))):
        return AccessDecision()
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    given = query.get("token", [None])[0]
    if path == "/" and _same(token, given):
        return AccessDecision(set_cookie=True)
    return AccessDecision(401, "Open the URL printed by `actoviq serve` (it carries the token).")
