"""The browser board: a FastAPI app (``create_app``) served by uvicorn (``serve``; ``python cli.py serve``).

Pages and scripts are the three files of ``frontends/static/`` (plain HTML, SVG drawn by a small
script, CSS; no build step, nothing loaded from elsewhere: the Content-Security-Policy allows this
origin only). They are read once when the app is made and served from memory by name, so no path
from a request ever reaches the file system.

JSON API (every error, also those raised outside the handlers, is ``{"error": "one line"}``: 400 for
bad input (also a body that is not UTF-8 or nests too deeply), 403 for an agent off the allow-list,
404 for an unknown game or route, 405 for a method a route does not take, 409 for a request the game
cannot take now, 413 for a body over ``max_body`` bytes (chunked bodies counted as they arrive), 422
for a malformed request). Agents come from an allow-list fixed at start-up (``session.Sessions``): the
operator's specs (``serve --agent``) and the registered agents without their options that name files;
a request never names a path (``docs/server.md``: the trust model and the limits).

- ``GET /api/config``: agents (the operator's specs first), the default agent, ruleset fields and
  defaults, limits;
- ``POST /api/games`` (``session.NewGame``): a new game, returns its view (``session.GameSession.view``);
- ``GET /api/games/{id}``: the view; ``POST .../options`` ``{"path": [...], "jump": bool}``: what may
  follow the clicks (``session.input_options``); ``POST .../move`` ``{"move": "e5-e6/c3"}`` or
  ``{"path": [...], "jump": bool, "victims": [...]}``: play the person's move;
- ``POST /api/games/{id}/agent``: the agent moves (in a worker thread, at most the form's seconds or
  ``session.MAX_SECONDS``); if the page goes away (the request is disconnected) the search is stopped;
- ``POST .../undo``, ``.../resign``, ``.../cancel``; ``GET .../record.json`` and ``.../record.jiu``;
- ``POST /api/reviews`` ``{"text", "format", "agent", "sims", "seconds"}``: upload a record (parsed by
  the validating readers of ``core.records``); ``GET /api/reviews/{id}/{ply}``: the position after
  ``ply`` moves; ``POST /api/reviews/{id}/{ply}/eval``: the engine's evaluation of move ``ply``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import Path, Request
from pydantic import BaseModel, ConfigDict, Field

from core.errors import JiuError
from frontends import DEFAULT_AGENT
from frontends.session import (
    MAX_SECONDS,
    MAX_SIMULATIONS,
    GameError,
    NewGame,
    NotOfferedError,
    Sessions,
    move_from_input,
)

MAX_BODY = 1 << 20  # bytes: a JSON record of a 1,000-ply game is about 15 kB
STATIC_FILES = {"index.html": "text/html; charset=utf-8", "board.js": "text/javascript; charset=utf-8",
                "board.css": "text/css; charset=utf-8"}
ID_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"
Id = Annotated[str, Path(pattern=ID_PATTERN)]  # game and review ids (``secrets.token_urlsafe``)
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
       "frame-ancestors 'none'; base-uri 'none'; form-action 'none'")


class OptionsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: list[str] = Field(default_factory=list, max_length=64)
    jump: bool = False


class MoveRequest(BaseModel):
    """Either ``move`` (notation) or ``path`` (+ ``jump``, ``victims``: point names in any order)."""

    model_config = ConfigDict(extra="forbid")
    move: str | None = Field(None, max_length=400)
    path: list[str] = Field(default_factory=list, max_length=64)
    jump: bool = False
    victims: list[str] = Field(default_factory=list, max_length=4)


class ReviewRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(..., min_length=1, max_length=MAX_BODY)
    format: Literal["json", "jiu"] | None = None
    agent: str | None = Field(None, min_length=1, max_length=200)
    sims: int | None = Field(None, ge=1, le=MAX_SIMULATIONS)
    seconds: float | None = Field(None, gt=0, le=MAX_SECONDS)


class BodyLimit:
    """ASGI middleware: refuse a request body over ``limit`` bytes with 413 ``{"error": ...}``, by its
    Content-Length and by counting what arrives (a chunked body has no length). The body is read here,
    at most ``limit`` bytes kept, before the app sees the request; the app then reads it from memory
    (and later messages, such as a disconnect, from the connection)."""

    def __init__(self, app, limit: int = MAX_BODY) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_big = f"request body over {self.limit} bytes"
        for key, value in scope.get("headers", []):
            if key == b"content-length":
                try:
                    if int(value) > self.limit:
                        return await _send_error(send, 413, too_big)
                except ValueError:
                    return await _send_error(send, 400, "Content-Length is not a number")
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away before the body ended
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                return await _send_error(send, 413, too_big)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _send_error(send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _static_files() -> dict[str, bytes]:
    folder = resources.files("frontends") / "static"
    return {name: (folder / name).read_bytes() for name in STATIC_FILES}


def create_app(default_agent: str = DEFAULT_AGENT, max_games: int = 32, max_body: int = MAX_BODY,
               poll_seconds: float = 0.1, agents: tuple[str, ...] | list[str] = ()):
    """The FastAPI app (module docstring). ``default_agent`` fills the new-game form; ``agents``: more
    specs the operator offers (with ``default_agent``, the only ones that may name weights files; see
    ``session.Sessions``); at most ``max_games`` games and as many reviews are kept; ``max_body``: bytes
    of a request body; ``poll_seconds``: how often a running agent move checks whether its page went
    away. ``app.state.sessions`` holds the games (``session.Sessions``)."""
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException

    from core.records import jiu_to_record, record_from_json, record_to_jiu, record_to_json
    from core.rules import Ruleset
    from knowledge.plugins import REGISTRY

    offered = list(dict.fromkeys([default_agent, *agents]))
    sessions = Sessions(max_games, offered)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        sessions.close()

    app = FastAPI(title="Jiu board", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.add_middleware(BodyLimit, limit=max_body)
    app.state.sessions = sessions
    static = _static_files()

    @app.exception_handler(GameError)
    async def _game_error(request: Request, exc: GameError):
        status = 404 if str(exc).startswith("unknown") else 409
        return JSONResponse({"error": str(exc)}, status_code=status)

    @app.exception_handler(JiuError)
    async def _jiu_error(request: Request, exc: JiuError):
        return JSONResponse({"error": str(exc)}, status_code=400)

    @app.exception_handler(NotOfferedError)
    async def _not_offered(request: Request, exc: NotOfferedError):
        return JSONResponse({"error": str(exc)}, status_code=403)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        err = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        if err.get("type") == "json_invalid":
            reason = (err.get("ctx") or {}).get("error", "JSON decode error")
            return JSONResponse({"error": f"request body: not valid JSON ({reason} at character {err['loc'][-1]})"},
                                status_code=422)
        field = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "request"
        return JSONResponse({"error": f"{field}: {err.get('msg')}"}, status_code=422)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException):
        """Errors raised outside the handlers (routing, body parsing) in the API's ``{"error": ...}``."""
        path = request.url.path if len(request.url.path) <= 80 else request.url.path[:80] + "..."
        if exc.status_code == 404:
            message = f"no such page or API route: {path}"
        elif exc.status_code == 405:
            message = f"method {request.method[:16]} is not allowed on {path}"
        elif exc.status_code == 400 and isinstance(exc.__cause__, UnicodeDecodeError):
            message = "request body: not UTF-8 text"
        elif exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
            message = "request body: JSON nested too deeply"
        elif exc.status_code == 400 and exc.__cause__ is not None:
            message = "request body: not valid JSON"
        else:
            message = str(exc.detail)
        return JSONResponse({"error": message}, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception):
        return JSONResponse({"error": f"internal error ({type(exc).__name__}); the server goes on"}, status_code=500)

    def page(name: str) -> Response:
        return Response(static[name], media_type=STATIC_FILES[name],
                        headers={"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                                 "Cache-Control": "no-cache"})

    @app.get("/")
    def index():
        return page("index.html")

    @app.get("/static/{name}")
    def static_file(name: str):
        if name not in static:
            return JSONResponse({"error": "no such file"}, status_code=404)
        return page(name)

    @app.get("/api/config")
    def config():
        fields = {k: {"default": f.default, "type": str(f.annotation)} for k, f in Ruleset.model_fields.items()}
        return {"agents": [*offered, *(n for n in REGISTRY.names("agent") if n not in offered)],
                "default_agent": default_agent, "rules": fields,
                "limits": {"seconds": MAX_SECONDS, "sims": MAX_SIMULATIONS, "body": max_body}}

    @app.post("/api/games", status_code=201)
    def new_game(form: NewGame):
        try:
            session = sessions.new_game(form)
        except JiuError:
            raise
        except (KeyError, ValueError, TypeError, FileNotFoundError) as exc:
            raise JiuError(f"agent {form.agent!r}: {exc.args[0] if exc.args else exc}") from None
        return session.view()

    @app.get("/api/games/{gid}")
    def game_view(gid: Id):
        return sessions.game(gid).view()

    @app.post("/api/games/{gid}/options")
    def options(body: OptionsRequest, gid: Id):
        return sessions.game(gid).options(body.path, body.jump)

    @app.post("/api/games/{gid}/move")
    def move(body: MoveRequest, gid: Id):
        from core.notation import parse_move

        session = sessions.game(gid)
        m = parse_move(body.move) if body.move is not None else move_from_input(body.path, body.jump, body.victims)
        return session.play_human(m)

    @app.post("/api/games/{gid}/agent")
    async def agent_move(request: Request, gid: Id):
        session = sessions.game(gid)
        stop, generation = session.begin_agent_move()
        return await _watched(request, stop, session.form.seconds, session.agent_move, stop, generation)

    async def _watched(request: Request, stop: threading.Event, seconds: float | None, fn, *args) -> Any:
        """Run ``fn(*args)`` in a worker thread; set ``stop`` when the client disconnects or the time
        limit (plus a grace second) passes. Searches honour ``stop`` within one simulation."""
        limit = (seconds if seconds is not None else MAX_SECONDS) + 1.0
        task = asyncio.ensure_future(run_in_threadpool(fn, *args))
        t0 = time.monotonic()
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll_seconds)
            if done:
                return task.result()
            if not stop.is_set() and (await request.is_disconnected() or time.monotonic() - t0 > limit):
                stop.set()

    @app.post("/api/games/{gid}/cancel")
    def cancel(gid: Id):
        session = sessions.game(gid)
        session.cancel()
        return session.view()

    @app.post("/api/games/{gid}/undo")
    def undo(gid: Id):
        return sessions.game(gid).undo()

    @app.post("/api/games/{gid}/resign")
    def resign(gid: Id):
        return sessions.game(gid).resign()

    @app.get("/api/games/{gid}/record.{fmt}")
    def record(gid: Id, fmt: Annotated[str, Path(pattern="^(json|jiu)$")]):
        rec = sessions.game(gid).record()
        text = record_to_json(rec, indent=1) if fmt == "json" else record_to_jiu(rec)
        return Response(text.encode("utf-8"), media_type="application/json" if fmt == "json" else "text/plain",
                        headers={"Content-Disposition": f'attachment; filename="jiu-{gid[:8]}.{fmt}"'})

    @app.post("/api/reviews", status_code=201)
    def new_review(body: ReviewRequest):
        fmt = body.format or ("json" if body.text.lstrip().startswith("{") else "jiu")
        rec = record_from_json(body.text, "upload") if fmt == "json" else jiu_to_record(body.text)
        spec = body.agent or default_agent
        try:
            review = sessions.new_review(rec, spec, body.sims, body.seconds)
        except JiuError:
            raise
        except (KeyError, ValueError, TypeError, FileNotFoundError) as exc:
            raise JiuError(f"agent {spec!r}: {exc.args[0] if exc.args else exc}") from None
        return review.position(0)

    @app.get("/api/reviews/{rid}/{ply}")
    def review_position(ply: int, rid: Id):
        return sessions.review(rid).position(ply)

    @app.post("/api/reviews/{rid}/{ply}/eval")
    async def review_eval(request: Request, ply: int, rid: Id):
        review = sessions.review(rid)
        stop = threading.Event()
        return await _watched(request, stop, review.seconds, review.evaluate_move, ply, stop)

    return app


class ServeError(ValueError):
    """``serve`` cannot start: the address does not resolve or the port cannot be bound (one line)."""


def listening_socket(host: str, port: int):
    """A TCP socket bound to ``host``:``port`` (``port`` 0: a free one), as uvicorn binds it
    (``SO_REUSEADDR``, IPv6 for an address with ``:``). Raises :class:`ServeError` naming the address
    and the reason (unknown host, port in use, no permission)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ServeError(f"serve: cannot resolve host {host!r} ({reason})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ServeError(f"serve: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    sock.set_inheritable(True)
    return sock


def serve(host: str = "127.0.0.1", port: int = 8000, default_agent: str = DEFAULT_AGENT, max_games: int = 32,
          agents: tuple[str, ...] | list[str] = ()) -> None:
    """Run the board with uvicorn until interrupted (``python cli.py serve``). The socket is bound here
    first (:func:`listening_socket`), so an address that cannot be used is one :class:`ServeError`."""
    import uvicorn

    sock = listening_socket(host, port)
    try:
        config = uvicorn.Config(create_app(default_agent, max_games, agents=agents), log_level="warning")
        print(f"Jiu board on http://{host}:{port}/ (Ctrl-C stops it)", flush=True)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


@contextlib.contextmanager
def running_server(app, host: str = "127.0.0.1", port: int = 0, timeout: float = 30.0):
    """Run ``app`` with uvicorn in a background thread (tests, screenshots); yields the base URL
    ``http://host:port`` once it accepts connections and stops it on exit. ``port=0`` picks a free port."""
    import uvicorn

    sock = listening_socket(host, port)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="uvicorn")
    thread.start()
    t0 = time.monotonic()
    while not server.started:
        if not thread.is_alive() or time.monotonic() - t0 > timeout:
            raise RuntimeError("the board server did not start")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()
