"""A svclab host in Python (docs/DEPLOY.md, "Host protocol"): it runs the one
component of its group, serves it on each of its listeners (grpc on grpcio,
http on uvicorn) with the health service beside it, serves the gateway and
the Control service when asked, and spreads its calls over each peer's
endpoint set by transport_options.balancer (callers.PeerSet)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable

import grpc
from google.protobuf.message import Message

from . import apps, calls
from ._gen.host.v1 import host_pb2
from .callers import Caller, PeerSet, check_endpoint, check_policy, endpoint_string
from .grpc_serving import GrpcServing
from .health import Health
from .http_serving import HttpApp, HttpServing, bind
from .metrics import Metrics, code_of
from .service import Service
from .status import RpcError

READY_MARKER = "svclab host ready:"
#: Precedes, in the host's last line, the calls it admitted on its listeners
#: and gateway (Go's runtime.ServedMarker): a replica's share.
SERVED_MARKER = "served, on its listeners,"
FAIL_COMPONENT_ENV = "SVCLAB_FAIL_COMPONENT"


class ConfigError(ValueError):
    """A config the host cannot use."""


class Host:
    def __init__(self, cfg: host_pb2.HostConfig) -> None:
        self.cfg = cfg
        self.peers: dict[str, PeerSet] = {}
        self.health = Health()
        self.in_flight = 0
        self.served = 0
        self.draining = False
        self.idle = asyncio.Event()
        self.idle.set()
        self.done = asyncio.Event()
        self.graceful = False
        self.grpc: GrpcServing | None = None
        self.http: HttpServing | None = None
        self.control: GrpcServing | None = None
        self.metrics: Metrics | None = None  # None without mesh.metrics
        self.where: list[str] = []
        self._sockets: list[socket.socket] = []
        self._closing: set[asyncio.Future[None]] = set()

    async def build(self) -> None:
        """Builds the component and binds every listener; run() serves."""
        cfg = self.cfg
        if len(cfg.components) != 1:
            raise ConfigError("the Python host runs one component per group, but group "
                              f"{cfg.group} has {list(cfg.components)}")
        comp = self.component = cfg.components[0]
        app = apps.lookup(cfg.app)
        app.configure(cfg.config_json)
        if comp not in app.components:
            raise ConfigError(f'app {app.name} has no component "{comp}"')
        if cfg.transport not in ("grpc", "http"):
            raise ConfigError(f'transport "{cfg.transport}" is not spoken by the Python host '
                              "(grpc, http; netrpc is Go-only, inproc cannot leave a process)")
        policy = cfg.transport_options.balancer
        try:
            check_policy(policy)
        except ValueError as err:
            raise ConfigError(str(err)) from err
        deps: dict[str, Caller] = {}
        for d in app.deps.get(comp, ()):
            if d not in cfg.peers:
                raise ConfigError(f"component {comp}: no endpoints for component {d}, which is "
                                  f"outside group {cfg.group}")
            try:
                self.peers[d] = deps[d] = PeerSet(d, cfg.peers[d], policy)
            except ValueError as err:
                raise ConfigError(f"component {comp}: peer {d}: {err}") from err
        for p in cfg.peers:
            if p not in self.peers:
                raise ConfigError(f"peer {p} is not called by component {comp}")
        if os.environ.get(FAIL_COMPONENT_ENV) == comp:
            raise ConfigError(f"component {comp}: failing at start because "
                              f"{FAIL_COMPONENT_ENV}={comp} (a test knob)")
        self._start_metrics()
        svc = app.build(comp, deps).intercept(self._admit)
        services = [svc, self.health.service()]

        listeners: list[tuple[str, host_pb2.Listener]] = []
        for name in sorted(cfg.listeners):
            if name != comp:
                raise ConfigError(f"listener for component {name}, "
                                  f"which is not in group {cfg.group}")
            listeners.append((name, cfg.listeners[name]))
        if cfg.HasField("gateway"):
            if cfg.entry != comp:
                raise ConfigError(f"gateway for entry {cfg.entry}, "
                                  f"which is not in group {cfg.group}")
            if cfg.gateway.endpoint.transport != "http":
                raise ConfigError("gateway: transport must be http, "
                                  f'got "{cfg.gateway.endpoint.transport}"')
            listeners.append(("gateway", cfg.gateway))
        http_socks = []
        for what, lis in listeners:
            _check_listener(what, lis)
            ep = lis.endpoint
            if ep.transport == "grpc":
                if lis.fd > 2:
                    raise ConfigError(f"{what}: listener fd {lis.fd} for {endpoint_string(ep)}: "
                                      "grpcio cannot serve an inherited socket; give fd 0 and the "
                                      "address to listen on")
                if self.grpc is None:
                    self.grpc = GrpcServing(services)
                self.where.append(f"{what} on {self.grpc.listen(ep)}")
            else:
                try:
                    s, at = bind(ep.network, ep.addr, lis.fd)
                except OSError as ex:
                    raise ConfigError(f"{what}: listen {endpoint_string(ep)}: {ex}") from ex
                self._sockets.append(s)
                http_socks.append(s)
                self.where.append(f"{what} on {at}")
        if http_socks:
            self.http = HttpServing(HttpApp(services), http_socks)
        if cfg.HasField("control"):
            _check_listener("control", cfg.control)
            if cfg.control.endpoint.transport != "grpc":
                raise ConfigError('control: transport must be grpc, got '
                                  f'"{cfg.control.endpoint.transport}"')
            if cfg.control.fd > 2:
                raise ConfigError("control: grpcio cannot serve an inherited socket")
            self.control = GrpcServing([self._control_service()])
            self.where.append(f"control on {self.control.listen(cfg.control.endpoint)}")

    def _start_metrics(self) -> None:
        """Serves mesh.metrics; refuses the mesh features this host does not have rather
        than ignore them."""
        mesh = self.cfg.mesh
        for other in ("tls", "tracing", "resilience"):
            if mesh.HasField(other):
                raise ConfigError("mesh: the Python host serves metrics alone of the mesh "
                                  f"features, but the config asks for {other}")
        if not mesh.HasField("metrics"):
            return
        try:
            self.metrics = Metrics(self.cfg.group, mesh.metrics)
        except (ValueError, OSError) as e:
            raise ConfigError(str(e)) from e
        self.where.append(f"metrics on {self.metrics.where()}")

    async def _admit(self, method: str, call: Callable[[], Awaitable[Message]]) -> Message:
        if self.draining:
            raise RpcError(grpc.StatusCode.UNAVAILABLE, f"group {self.cfg.group} is draining")
        self.in_flight += 1
        self.served += 1
        self.idle.clear()
        start = time.perf_counter()
        code = grpc.StatusCode.OK
        try:
            if calls.propagate_enabled():
                calls.outgoing.set(calls.propagated(calls.incoming.get()))
            return await call()
        except BaseException as e:
            code = code_of(e)
            raise
        finally:
            if self.metrics is not None:
                self.metrics.observe(self.component, method.lstrip("/"),
                                     time.perf_counter() - start, code)
            self.in_flight -= 1
            if self.in_flight == 0:
                self.idle.set()

    def _drain(self) -> None:
        if not self.draining:
            calls.log(f"group {self.cfg.group}: draining: new calls refused, "
                      f"{self.in_flight} in flight")
        self.draining = True
        self.health.shutdown()

    async def _await_idle(self) -> None:
        left = calls.remaining()
        try:
            async with asyncio.timeout(left):
                await self.idle.wait()
        except TimeoutError as e:
            raise RpcError(grpc.StatusCode.DEADLINE_EXCEEDED,
                           f"drain: {self.in_flight} call(s) still in flight") from e

    def _control_service(self) -> Service:
        async def update(req: host_pb2.UpdatePeersRequest) -> host_pb2.UpdatePeersResponse:
            for name, eps in req.peers.items():
                if name not in self.peers:
                    raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                                   f"group {self.cfg.group} does not call {name}")
                try:
                    PeerSet.check(eps)
                except ValueError as e:
                    raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"peer {name}: {e}") from e
            for name, eps in req.peers.items():
                for gone in self.peers[name].update(eps):
                    # Closed in the background; grpcio lets calls in flight finish.
                    task = asyncio.ensure_future(gone.close())
                    self._closing.add(task)
                    task.add_done_callback(self._closing.discard)
            return host_pb2.UpdatePeersResponse()

        async def drain(req: host_pb2.DrainRequest) -> host_pb2.DrainResponse:
            self._drain()
            await self._await_idle()
            return host_pb2.DrainResponse()

        async def stop(req: host_pb2.StopRequest) -> host_pb2.StopResponse:
            self._drain()
            with contextlib.suppress(RpcError):  # the deadline ended first: stop all the same
                await self._await_idle()
            self.graceful = True
            asyncio.get_running_loop().call_later(0.05, self.done.set)
            return host_pb2.StopResponse()

        return (Service("svclab.host.v1.Control")
                .add("UpdatePeers", host_pb2.UpdatePeersRequest, host_pb2.UpdatePeersResponse,
                     update)
                .add("Drain", host_pb2.DrainRequest, host_pb2.DrainResponse, drain)
                .add("Stop", host_pb2.StopRequest, host_pb2.StopResponse, stop))

    async def run(self) -> None:
        """Serves until SIGTERM or SIGINT, or Control.Stop."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.done.set)
        try:
            for srv in (self.grpc, self.control):
                if srv is not None:
                    await srv.start()
            if self.http is not None:
                await self.http.start()
            cfg = self.cfg
            calls.log(f"{READY_MARKER} group {cfg.group} ({self.component}) of {cfg.app}, "
                      f"deployment {cfg.deployment}; serving {', '.join(self.where) or 'nothing'}")
            await self.done.wait()
        finally:
            await self.close()
            calls.log(f"group {self.cfg.group}: {SERVED_MARKER} {self.served} calls")

    async def close(self) -> None:
        grace = 1.0 if self.graceful else None
        if self.grpc is not None:
            await self.grpc.stop(grace)
        if self.http is not None:
            await self.http.stop()
        for s in self._sockets:
            s.close()
        for p in self.peers.values():
            await p.close()
        if self.control is not None:
            await self.control.stop(None)
        if self.metrics is not None:
            self.metrics.close()


def _check_listener(what: str, lis: host_pb2.Listener) -> None:
    try:
        check_endpoint(lis.endpoint)
    except ValueError as e:
        raise ConfigError(f"{what}: {e}") from e
