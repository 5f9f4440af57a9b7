"""Clients of peer components: one per endpoint over its transport, and the
endpoint set of a peer with its balancer. A call takes its deadline and
outgoing metadata from the context (calls.deadline, calls.outgoing) and
fails with an RpcError bearing the peer's code and message."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any, Protocol, TypeVar

import grpc
import httpx
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2

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
            timeout = None if left is None else timeouts.for_grpcio(left)
            result: R = await stub(request, timeout=timeout, metadata=md or None)
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


ROUND_ROBIN = "round_robin"
LEAST_OUTSTANDING = "least_outstanding"
PROBE_MIN = 0.02
PROBE_MAX = 1.0
PROBE_TIMEOUT = 1.0


def check_policy(policy: str) -> None:
    """Fails, naming the known ones, on a balancer the host does not have."""
    if policy not in ("", ROUND_ROBIN, LEAST_OUTSTANDING):
        raise ValueError(f'transport_options.balancer: unknown balancer "{policy}" '
                         f"(known: {LEAST_OUTSTANDING}, {ROUND_ROBIN})")


class _Sub:
    """One endpoint of a set: its client, calls in flight, picks and health."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller
        self.outstanding = 0
        self.picks = 0
        self.sick = False
        self.retired = False
        self.probe: asyncio.Task[None] | None = None

    def eject(self) -> None:
        """Takes the endpoint out of the choice and starts its probe, once."""
        if self.sick or self.retired:
            return
        self.sick = True
        self.probe = asyncio.ensure_future(self._probe())

    async def _probe(self) -> None:
        wait = PROBE_MIN
        # The task has a context of its own: this deadline and the empty
        # metadata are the probe's only.
        calls.outgoing.set(())
        while not self.retired:
            await asyncio.sleep(wait)
            wait = min(2 * wait, PROBE_MAX)
            if self.retired:
                return
            calls.deadline.set(asyncio.get_running_loop().time() + PROBE_TIMEOUT)
            try:
                r = await self.caller.call("/grpc.health.v1.Health/Check",
                                           health_pb2.HealthCheckRequest(),
                                           health_pb2.HealthCheckResponse)
            except Exception:  # any failure means: not serving yet
                continue
            if r.status == health_pb2.HealthCheckResponse.SERVING:
                self.sick = False
                return

    async def close(self) -> None:
        self.retired = True
        if self.probe is not None:
            self.probe.cancel()
        await self.caller.close()


class PeerSet:
    """The endpoint set of one peer component and the balancer over it, as the
    Go host's internal/runtime/balancer does it (docs/DEPLOY.md, "Replicas,
    load balancing and autoscaling"): round robin from a random start, or
    least outstanding (fewest of this host's calls in flight, ties to the
    endpoint picked least often). A call that fails UNAVAILABLE takes its
    endpoint out of the choice until its health service answers SERVING,
    asked with a backoff from 20 ms to 1 s; while every endpoint is out,
    calls go to them in turn. The deployer may replace the set while calls
    run (Control.UpdatePeers)."""

    def __init__(self, component: str, endpoints: host_pb2.EndpointSet,
                 policy: str = "") -> None:
        check_policy(policy)
        self.component = component
        self._least = policy == LEAST_OUTSTANDING
        self._by_addr: dict[str, _Sub] = {}
        self._subs: list[_Sub] = []
        self._next = 0
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

    def update(self, endpoints: host_pb2.EndpointSet) -> list[_Sub]:
        """Replaces the set, keeping the connections and health of endpoints
        listed again; returns those dropped from it, to close."""
        self.check(endpoints)
        now: dict[str, _Sub] = {}
        for e in endpoints.endpoints:
            s = endpoint_string(e)
            old = self._by_addr.pop(s, None)
            now[s] = old if old is not None else _Sub(dial(e))
        gone = list(self._by_addr.values())
        for g in gone:
            g.retired = True
        self._by_addr = now
        self._subs = list(now.values())
        # A random start, as grpc-go's round_robin: replicas of one caller
        # started together do not all send their first call to one endpoint.
        self._next = random.randrange(len(self._subs)) if self._subs else 0
        return gone

    def _round_robin(self) -> _Sub:
        subs, i = self._subs, self._next
        n = len(subs)
        for k in range(n):
            s = subs[(i + k) % n]
            if not s.sick:
                self._next = i + k + 1
                return s
        self._next = i + 1
        return subs[i % n]  # every endpoint is sick: try them in turn

    def _least_outstanding(self) -> _Sub:
        subs = self._subs
        n = len(subs)
        start = self._next % n
        self._next += 1
        best: _Sub | None = None
        for k in range(n):
            s = subs[(start + k) % n]
            if s.sick:
                continue
            if best is None or (s.outstanding, s.picks) < (best.outstanding, best.picks):
                best = s
        if best is None:
            best = subs[start]  # every endpoint is sick: try them in turn
        best.picks += 1
        return best

    async def call(self, method: str, request: Message, response: type[R]) -> R:
        if not self._subs:
            raise RpcError(grpc.StatusCode.UNAVAILABLE,
                           f"no endpoints for component {self.component}")
        s = self._least_outstanding() if self._least else self._round_robin()
        s.outstanding += 1
        try:
            return await s.caller.call(method, request, response)
        except RpcError as e:
            if e.code == grpc.StatusCode.UNAVAILABLE:
                s.eject()
            raise
        finally:
            s.outstanding -= 1

    async def close(self) -> None:
        for s in self._by_addr.values():
            await s.close()
        self._by_addr = {}
        self._subs = []
