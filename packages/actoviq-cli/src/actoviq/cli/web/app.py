"""The local web chat page of ``actoviq serve``: a Starlette app over one agent's runtime.

Routes (every one behind :mod:`actoviq.cli.web.security`):

* ``GET /`` — the page; ``GET /static/<file>`` — its script and style, served from the wheel.
* ``GET /api/info`` — agent, model, default session.
* ``GET /api/sessions`` — stored sessions; ``GET /api/sessions/<id>`` — transcript, usage and
  runs of the session waiting for an approval.
* ``POST /api/sessions/<id>/messages`` ``{"text"}`` — runs the agent on the session and streams
  Server-Sent Events: ``semantic`` (each ``gui`` semantic event), then ``result`` or ``error``.
* ``POST /api/runs/<id>/decisions`` ``{"decisions": [{"interruptionId", "outcome"}]}`` — resumes
  a paused run from the checkpoint store (exactly once: a second decision is refused) and streams
  it the same way. ``POST /api/runs/<id>/cancel`` — cancels a run streaming here.

A client that goes away cancels its run (the session stores nothing of a cancelled run).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any, Final, cast

from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from actoviq.cli.agents import ResolvedAgent
from actoviq.cli.environment import CliEnvironment
from actoviq.cli.errors import error_document
from actoviq.cli.sessions import (
    items_json,
    list_sessions,
    record_json,
    session_usage,
    transcript,
    usage_json,
)
from actoviq.cli.web.security import SECURITY_HEADERS, check_request, cookie_name
from actoviq.core import Interruption, JsonObject, RunResult
from actoviq.runtime import InterruptionDecision, SerializedRunState
from actoviq.surfaces import AgentRuntimeBridgeAdapter, BridgeStream, surface_event_to_json

__all__ = ["WebChat", "create_web_app"]

_STATIC: Final = {"app.js": "text/javascript", "app.css": "text/css"}
_MAX_TEXT: Final = 100_000


def _asset(name: str) -> str:
    return resources.files("actoviq.cli.web").joinpath("static", name).read_text("utf-8")


def _problem(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


class _Guard:
    """ASGI middleware: the token check and the security headers on every answer."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: frozenset[str]) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        decision = check_request(cast(dict[str, Any], scope), self.token, self.hosts)

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        if decision.set_cookie:
            cookie = f"{cookie_name(self.token)}={self.token}; HttpOnly; SameSite=Strict; Path=/"
            redirect = RedirectResponse("/", status_code=303, headers={"set-cookie": cookie})
            await redirect(scope, receive, send_secured)
            return
        if decision.status:
            refused = _problem(decision.status, "UNAUTHORIZED", decision.message)
            if decision.status == 401 and not str(scope.get("path", "")).startswith("/api/"):
                refused = Response(
                    f"<!doctype html><title>actoviq</title><p>{decision.message}</p>",
                    status_code=401,
                    media_type="text/html",
                )
            await refused(scope, receive, send_secured)
            return
        await self.app(scope, receive, send_secured)


class WebChat:
    """The page's handlers over one agent (the environment and runtime belong to the caller).

    Args:
        env: storage and checkpoints.
        agent: the agent every message runs.
        bridge: the bridge (``gui`` target) over the caller's runtime.
        token: the secret the page embeds for its API calls.
    """

    def __init__(
        self,
        env: CliEnvironment,
        agent: ResolvedAgent,
        bridge: AgentRuntimeBridgeAdapter,
        token: str,
    ) -> None:
        self.env = env
        self.agent = agent
        self.bridge = bridge
        self.token = token
        self.active: dict[str, BridgeStream] = {}

    # -- page --------------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        """The chat page, with the token and the agent in ``<meta>`` tags."""
        from html import escape

        html = (
            _asset("index.html")
            .replace("{{token}}", escape(self.token))
            .replace("{{agent}}", escape(self.agent.spec.name))
            .replace("{{session}}", escape(self.agent.spec.id))
        )
        return Response(html, media_type="text/html")

    async def static(self, request: Request) -> Response:
        """``app.js`` / ``app.css`` from the wheel (nothing from a CDN)."""
        name = request.path_params["name"]
        kind = _STATIC.get(name)
        if kind is None:
            return _problem(404, "NOT_FOUND", "No such asset.")
        return Response(_asset(name), media_type=kind)

    # -- reads ---------------------------------------------------------------------------------

    async def info(self, request: Request) -> Response:
        """Agent, model and default session."""
        return JSONResponse(
            {
                "agent": self.agent.spec.id,
                "name": self.agent.spec.name,
                "model": self.agent.spec.model,
                "session": self.agent.spec.id,
            }
        )

    async def sessions(self, request: Request) -> Response:
        """Stored sessions, newest first."""
        records = await list_sessions(self.env, limit=200)
        return JSONResponse({"sessions": [record_json(r) for r in records]})

    async def pending(self, session_id: str) -> list[JsonObject]:
        """Paused runs of the session, with what each waits for."""
        storage = await self.env.storage()
        records = await storage.checkpoints.list_checkpoints(tenant_id=self.env.tenant)
        waiting: list[JsonObject] = []
        for record in records:
            if record.session_id != session_id or record.state.get("status") != "interrupted":
                continue
            state = SerializedRunState.from_json(record.state)
            waiting.append(
                {
                    "runId": state.run_id,
                    "interruptions": [_interruption_json(i) for i in state.interruptions],
                }
            )
        return waiting

    async def session(self, request: Request) -> Response:
        """A session's transcript, usage and paused runs (an unknown id is an empty session)."""
        session_id = request.path_params["session"]
        try:
            items = await transcript(self.env, session_id)
        except LookupError:
            items = []
        usage, runs = await session_usage(self.env, session_id)
        return JSONResponse(
            {
                "sessionId": session_id,
                "items": items_json(items),
                "usage": usage_json(usage),
                "runs": runs,
                "pending": await self.pending(session_id),
            }
        )

    # -- runs ----------------------------------------------------------------------------------

    async def _events(self, stream: BridgeStream) -> AsyncIterator[dict[str, str]]:
        run_id = stream.run_id
        self.active[run_id] = stream
        try:
            async with stream:
                async for event in stream:
                    yield {"event": "semantic", "data": json.dumps(surface_event_to_json(event))}
                result: RunResult[Any] = await stream.result()
            yield {"event": "result", "data": json.dumps(_result_json(result))}
        except Exception as error:  # a failed run ends the stream with its typed error
            yield {"event": "error", "data": json.dumps(error_document(error))}
        finally:
            self.active.pop(run_id, None)

    async def message(self, request: Request) -> Response:
        """Run one message on the session and stream it."""
        session_id = request.path_params["session"]
        body = await _json_body(request)
        text = body.get("text") if body is not None else None
        if not isinstance(text, str) or not text.strip() or len(text) > _MAX_TEXT:
            return _problem(400, "BAD_REQUEST", 'Send {"text": "<message>"}.')
        stream = self.bridge.stream(
            text,
            session_id=session_id,
            tenant_id=self.env.tenant,
            metadata=self.agent.metadata(),
        )
        return EventSourceResponse(self._events(stream), ping=15)

    async def decide(self, request: Request) -> Response:
        """Resume a paused run with the page's decisions and stream it."""
        run_id = request.path_params["run"]
        body = await _json_body(request)
        raw = body.get("decisions") if body is not None else None
        if not isinstance(raw, list) or not raw:
            return _problem(
                400, "BAD_REQUEST", 'Send {"decisions": [{"interruptionId", "outcome"}]}.'
            )
        decisions: list[InterruptionDecision] = []
        for entry in cast(list[Any], raw):
            if not isinstance(entry, dict):
                return _problem(400, "BAD_REQUEST", "Each decision is an object.")
            data = cast(dict[str, Any], entry)
            target, outcome = data.get("interruptionId"), data.get("outcome")
            if not isinstance(target, str) or outcome not in ("approve", "reject"):
                return _problem(400, "BAD_REQUEST", "outcome is approve or reject.")
            decisions.append(
                InterruptionDecision.approve(target)
                if outcome == "approve"
                else InterruptionDecision.reject(target, "Rejected on the web page.")
            )
        store = await self.env.checkpoints()
        state = await store.load(run_id)
        if state is None:
            return _problem(404, "NOT_FOUND", f"No checkpoint for run {run_id}.")
        try:
            stream = self.bridge.resume(state, decisions)
        except Exception as error:  # refused before anything ran (decided twice, bad id)
            document = error_document(error)
            status = 409 if document["exitCode"] == 5 else 400
            return JSONResponse(document, status_code=status)
        return EventSourceResponse(self._events(stream), ping=15)

    async def cancel(self, request: Request) -> Response:
        """Cancel a run streaming from this server."""
        stream = self.active.get(request.path_params["run"])
        if stream is None:
            return _problem(404, "NOT_FOUND", "No such run streaming here.")
        stream.cancel("Cancelled on the web page.")
        return JSONResponse({"cancelled": True})


async def _json_body(request: Request) -> dict[str, Any] | None:
    try:
        data: Any = await request.json()
    except ValueError:
        return None
    return cast(dict[str, Any], data) if isinstance(data, dict) else None


def _interruption_json(interruption: Interruption) -> JsonObject:
    return {
        "id": interruption.id,
        "kind": interruption.kind,
        "reason": interruption.reason,
        "callId": interruption.call_id,
        "toolName": interruption.tool_name,
    }


def _result_json(result: RunResult[Any]) -> JsonObject:
    from actoviq.core import find_json_violation

    output = result.output if find_json_violation(result.output) is None else repr(result.output)
    return {
        "runId": result.run_id,
        "status": result.status,
        "output": output,
        "usage": usage_json(result.usage),
        "interruptions": [_interruption_json(i) for i in result.interruptions],
    }


def create_web_app(chat: WebChat, *, hosts: frozenset[str]) -> ASGIApp:
    """The ASGI app: the routes of ``chat`` behind the token guard."""
    app = Starlette(
        routes=[
            Route("/", chat.page, methods=["GET"]),
            Route("/static/{name}", chat.static, methods=["GET"]),
            Route("/api/info", chat.info, methods=["GET"]),
            Route("/api/sessions", chat.sessions, methods=["GET"]),
            Route("/api/sessions/{session}", chat.session, methods=["GET"]),
            Route("/api/sessions/{session}/messages", chat.message, methods=["POST"]),
            Route("/api/runs/{run}/decisions", chat.decide, methods=["POST"]),
            Route("/api/runs/{run}/cancel", chat.cancel, methods=["POST"]),
        ]
    )
    return _Guard(app, token=chat.token, hosts=hosts)
