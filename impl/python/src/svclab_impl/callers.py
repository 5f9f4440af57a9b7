"""Clients of peer components: one per endpoint over its transport, and the
endpoint set of a peer called round robin. A call takes its deadline and
outgoing metadata from the context (calls.deadline, calls.outgoing) and
fails with an RpcError bearing the peer's code and message."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any, Protocol, TypeVar

import grpc
import httpx
from google.protobuf import json_format
from google.protobuf.message import Message

from . import calls, timeouts
from ._gen.host.v1 import host_pb2
from .status import CODES, RpcError, code_of_http, deadline_exceeded, query_unescape

R = TypeVar("R", bound=Message)

TRANSPORTS = ("grpc", "http")


class Caller(Protocol):
    async def call(self, method: str, request: Message, response: type[R]) -> R: ...

    async def close(self) -> None: ...


def endpoint_string(e: host_pb2.Endpoint) -> str:
    return f"{e.transport}+{e.network}://{e.addr}"


def check_endpoint(e: host_pb2.Endpoint) -> None:
    if e.transport not in TRANSPORTS:
        raise ValueError(f'endpoint {endpoint_string(e)}: transport "{e.transport}" is not spoken '
                         "by the Python host (grpc, http; netrpc is Go-only)")
    if e.network not in ("tcp", "unix"):
        raise ValueError(f'endpoint {endpoint_string(e)}: network "{e.network}" is neither tcp '
                         "nor unix")


def dial(e: host_pb2.Endpoint) -> Caller:
    check_endpoint(e)
    return GrpcCaller(e) if e.transport == "grpc" else HttpCaller(e)


def to_json(m: Message) -> bytes:
    return json.dumps(json_format.MessageToDict(m), separators=(",", ":")).encode()


def from_json(body: bytes, m: Message) -> None:
    json_format.Parse(body, m, ignore_unknown_fields=True)


class GrpcCaller:
    """A grpcio asyncio channel to one endpoint."""

    def __init__(self, e: host_pb2.Endpoint) -> None:
        target = f"unix:{e.addr}" if e.network == "unix" else e.addr
        self._channel = grpc.aio.insecure_channel(target)
        self._stubs: dict[str, Any] = {}

    async def call(self, method: str, request: Message, response: type[R]) -> R:
        stub = self._stubs.get(method)
        if stub is None:
            stub = self._channel.unary_unary(
                method, request_serializer=type(request).SerializeToString,
                response_deserializer=response.FromString)
            self._stubs[method] = stub
        left = calls.remaining()
        if left is not None and left <= 0:
            raise deadline_exceeded()
        md = calls.outgoing.get()
        try:
            result: R = await stub(request, timeout=left, metadata=md or None)
        except grpc.aio.AioRpcError as e:
            raise RpcError(e.code(), e.details() or "") from e
        return result

    async def close(self) -> None:
        await self._channel.close(grace=None)


class HttpCaller:
    """An httpx HTTP/1.1 client of one endpoint, connections kept alive."""

    def __init__(self, e: host_pb2.Endpoint) -> None:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=1024)
        if e.network == "unix":
            transport = httpx.AsyncHTTPTransport(uds=e.addr, limits=limits)
            base = "http://localhost"
        else:
            transport = httpx.AsyncHTTPTransport(limits=limits)
            base = f"http://{e.addr}"
        self._client = httpx.AsyncClient(base_url=base, transport=transport, timeout=None,
                                         headers={"Accept-Encoding": "identity"})

    async def call(self, method: str, request: Message, response: type[R]) -> R:
        headers = {"Content-Type": "application/json"}
        left = calls.remaining()
        if left is not None:
            if left <= 0:
                raise deadline_exceeded()
            headers["Grpc-Timeout"] = timeouts.encode(left)
        hs = list(headers.items()) + calls.metadata_headers(calls.outgoing.get())
        try:
            async with asyncio.timeout(left):
                r = await self._client.post(method, content=to_json(request), headers=hs)
        except TimeoutError as e:
            raise deadline_exceeded() from e
        except httpx.HTTPError as e:
            raise RpcError(grpc.StatusCode.UNAVAILABLE, f"http: {method}: {e!r}") from e
        if r.status_code != 200:
            raise response_status(r)
        out = response()
        try:
            from_json(r.content, out)
        except json_format.ParseError as e:
            raise RpcError(grpc.StatusCode.INTERNAL,
                           f"http: decoding {method} response: {e}") from e
        return out

    async def close(self) -> None:
        await self._client.aclose()


def response_status(r: httpx.Response) -> RpcError:
    """A failed answer's status: from its body, else its headers, else its HTTP status."""
    try:
        body = json.loads(r.content)
        code = body.get("code", 0) if isinstance(body, dict) else 0
        if isinstance(code, int) and code != 0 and code in CODES:
            return RpcError(CODES[code], str(body.get("message", "")))
    except ValueError:
        pass
    h = r.headers.get("Grpc-Status", "")
    if h.isdigit() and int(h) != 0 and int(h) in CODES:
        return RpcError(CODES[int(h)], query_unescape(r.headers.get("Grpc-Message", "")))
    text = r.text.strip()
    if len(text) > 512:
        text = text[:512] + "..."
    return RpcError(CODES[code_of_http(r.status_code)], f"http: {r.status_code}: {text}")


class PeerSet:
    """The endpoint set of one peer component, called round robin; the deployer
    may replace it while calls run (Control.UpdatePeers)."""

    def __init__(self, component: str, endpoints: host_pb2.EndpointSet) -> None:
        self.component = component
        self._by_addr: dict[str, Caller] = {}
        self._callers: list[Caller] = []
        self._next = itertools.count()
        self.update(endpoints)

    @staticmethod
    def check(endpoints: host_pb2.EndpointSet) -> None:
        seen = set()
        for e in endpoints.endpoints:
            check_endpoint(e)
            s = endpoint_string(e)
            if s in seen:
                raise ValueError(f"endpoint {s} is listed twice")
            seen.add(s)

    def update(self, endpoints: host_pb2.EndpointSet) -> list[Caller]:
        """Replaces the set; returns the callers dropped from it, to close."""
        self.check(endpoints)
        now: dict[str, Caller] = {}
        for e in endpoints.endpoints:
            s = endpoint_string(e)
            old = self._by_addr.pop(s, None)
            now[s] = old if old is not None else dial(e)
        gone = list(self._by_addr.values())
        self._by_addr = now
        self._callers = list(now.values())
        return gone

    async def call(self, method: str, request: Message, response: type[R]) -> R:
        cs = self._callers
        if not cs:
            raise RpcError(grpc.StatusCode.UNAVAILABLE,
                           f"no endpoints for component {self.component}")
        return await cs[next(self._next) % len(cs)].call(method, request, response)

    async def close(self) -> None:
        for c in self._by_addr.values():
            await c.close()
        self._by_addr = {}
        self._callers = []
