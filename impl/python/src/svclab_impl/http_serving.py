"""Listeners over the http transport: a plain ASGI application on uvicorn.

POST /pkg.Service/Method with the request in protojson; the response in
protojson, or a failure as grpc-gateway's HTTP status with Grpc-Status,
Grpc-Message and a google.rpc.Status body; Grpc-Timeout becomes the call's
deadline, the other headers its incoming metadata; a client that closes
its connection cancels the call (docs/TRANSPORTS.md)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import uvicorn
from google.protobuf import json_format

from . import calls, timeouts
from .callers import to_json
from .service import Method, Service
from .status import RpcError, http_status, query_escape

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_JSON = [(b"content-type", b"application/json")]


class HttpApp:
    """The ASGI application: every registered method's route."""

    def __init__(self, services: Sequence[Service]) -> None:
        self.routes: dict[str, Method] = {}
        for s in services:
            for name, m in s.methods.items():
                self.routes[s.path(name)] = m

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan and websockets: nothing to do
        status, headers, body = await self.answer(scope, receive)
        headers = [*headers, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def answer(self, scope: Scope, receive: Receive) -> tuple[int, list[Any], bytes]:
        path = scope["path"]
        m = self.routes.get(path)
        if m is None:
            return failure(RpcError(_UNIMPLEMENTED, f"http: unknown method {path}"), 404)
        if scope["method"] != "POST":
            st, hs, body = failure(RpcError(
                _UNIMPLEMENTED, f"http: {path} takes POST, not {scope['method']}"), 405)
            return st, [*hs, (b"allow", b"POST")], body
        timeout = None
        for k, v in scope["headers"]:
            if k == b"grpc-timeout":
                try:
                    timeout = timeouts.decode(v.decode("latin-1"))
                except ValueError as e:
                    return failure(RpcError(_INVALID, f"http: Grpc-Timeout header: {e}"))
                break
        body = await read_body(receive)
        req = m.request()
        if body:
            try:
                json_format.Parse(body, req, ignore_unknown_fields=True)
            except (json_format.ParseError, ValueError) as e:
                return failure(RpcError(
                    _INVALID, f"http: decoding {path} request: {e}"))
        return await self.call(m, req, timeout, calls.header_metadata(scope["headers"]), receive)

    async def call(self, m: Method, req: Any, timeout: float | None, md: calls.Metadata,
                   receive: Receive) -> tuple[int, list[Any], bytes]:
        loop = asyncio.get_running_loop()
        ctx_deadline = None if timeout is None else loop.time() + timeout

        async def run() -> Any:
            calls.deadline.set(ctx_deadline)
            calls.incoming.set(md)
            return await m.handler(req)

        task = asyncio.ensure_future(run())
        gone = asyncio.ensure_future(disconnected(receive))
        try:
            await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if not task.done():
            # The client closed the connection: the call's context ends.
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            return failure(RpcError(_CANCELLED, "context canceled"))
        try:
            resp = task.result()
        except RpcError as e:
            return failure(e)
        except asyncio.CancelledError:
            return failure(RpcError(_CANCELLED, "context canceled"))
        except Exception as e:  # a plain error is UNKNOWN with its text, as in grpc-go
            return failure(RpcError(_UNKNOWN, str(e)))
        return 200, list(_JSON), to_json(resp)


async def read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            break
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body"):
            break
    return b"".join(chunks)


async def disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def failure(e: RpcError, status: int = 0) -> tuple[int, list[Any], bytes]:
    body = json.dumps({"code": e.number, "message": e.message}, separators=(",", ":"))
    headers = [*_JSON, (b"grpc-status", str(e.number).encode()),
               (b"grpc-message", query_escape(e.message).encode())]
    return status or http_status(e.number), headers, body.encode()


def _code(name: str) -> Any:
    import grpc

    return getattr(grpc.StatusCode, name)


_UNIMPLEMENTED = _code("UNIMPLEMENTED")
_INVALID = _code("INVALID_ARGUMENT")
_CANCELLED = _code("CANCELLED")
_UNKNOWN = _code("UNKNOWN")


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers: the host owns SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class HttpServing:
    """uvicorn serving an HttpApp on sockets the host bound (or inherited)."""

    def __init__(self, app: HttpApp, sockets: list[socket.socket]) -> None:
        config = uvicorn.Config(app, http="httptools", lifespan="off", log_level="warning",
                                access_log=False, server_header=False)
        self.server = _Server(config)
        self.sockets = sockets
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.ensure_future(self.server.serve(sockets=self.sockets))
        while not self.server.started:
            if self.task.done():
                self.task.result()  # raises what failed
                raise OSError("http server did not start")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self.server.should_exit = True
        self.server.force_exit = True
        if self.task is not None:
            await self.task


def bind(network: str, addr: str, fd: int = 0) -> tuple[socket.socket, str]:
    """A listening socket for an http listener, and where it serves."""
    if fd > 2:
        s = socket.socket(fileno=fd)  # inherited, bound and listening: family detected
    elif network == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(addr)
        s.listen(1024)
    else:
        host, _, port = addr.rpartition(":")
        host = host.strip("[]")
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted sockets
        # only when their proto says TCP, and uvicorn writes an answer's
        # head and body apart, which Nagle's algorithm would hold back for
        # the peer's delayed ACK (40 ms).
        s = socket.socket(fam, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, int(port)))
        s.listen(1024)
    s.setblocking(False)
    if s.family != socket.AF_UNIX:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted sockets
    if s.family == socket.AF_UNIX:
        return s, f"http+unix://{s.getsockname() or addr}"
    h, p = s.getsockname()[:2]
    return s, f"http+tcp://{f'[{h}]' if ':' in h else h}:{p}"
