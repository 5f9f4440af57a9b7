"""deploy.metrics in the Python host: the Go host's RED metrics
(internal/runtime/middleware/metrics), with the same names, labels and
buckets, so that metrics.parquet and the report treat a Python component as a
Go one. prometheus_client serves them on HostConfig.mesh.metrics.listener,
beside the process's CPU and resident memory (process_cpu_seconds_total,
process_resident_memory_bytes)."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Sequence
from wsgiref.simple_server import WSGIServer

import grpc
import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector

from ._gen.host.v1 import host_pb2
from .callers import endpoint_string
from .status import RpcError

REQUESTS = "svclab_requests"  # prometheus_client adds _total to a counter's name
ERRORS = "svclab_request_errors"
DURATION = "svclab_request_duration_seconds"

# The Go host's exposition has no *_created series; without this,
# prometheus_client adds one per counter and histogram, and Prometheus would
# keep them as series of their own.
prometheus_client.disable_created_metrics()

#: grpc-go's names of the codes (codes.Code.String()), which label errors on every host.
GO_CODES = {
    grpc.StatusCode.OK: "OK",
    grpc.StatusCode.CANCELLED: "Canceled",
    grpc.StatusCode.UNKNOWN: "Unknown",
    grpc.StatusCode.INVALID_ARGUMENT: "InvalidArgument",
    grpc.StatusCode.DEADLINE_EXCEEDED: "DeadlineExceeded",
    grpc.StatusCode.NOT_FOUND: "NotFound",
    grpc.StatusCode.ALREADY_EXISTS: "AlreadyExists",
    grpc.StatusCode.PERMISSION_DENIED: "PermissionDenied",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "ResourceExhausted",
    grpc.StatusCode.FAILED_PRECONDITION: "FailedPrecondition",
    grpc.StatusCode.ABORTED: "Aborted",
    grpc.StatusCode.OUT_OF_RANGE: "OutOfRange",
    grpc.StatusCode.UNIMPLEMENTED: "Unimplemented",
    grpc.StatusCode.INTERNAL: "Internal",
    grpc.StatusCode.UNAVAILABLE: "Unavailable",
    grpc.StatusCode.DATA_LOSS: "DataLoss",
    grpc.StatusCode.UNAUTHENTICATED: "Unauthenticated",
}


def buckets(given: Sequence[float]) -> list[float]:
    """The deployer's bounds; without them, the Go host's formula
    (prometheus.ExponentialBucketsRange(50e-6, 10, 20)), whose last digits may
    differ from Go's math.Pow."""
    if given:
        return list(given)
    growth = math.pow(10 / 50e-6, 1 / 19)
    return [50e-6 * math.pow(growth, i) for i in range(20)]


def code_of(err: BaseException) -> grpc.StatusCode:
    """The status a call that raised err ends with, as the servers answer it."""
    if isinstance(err, RpcError):
        return err.code
    if isinstance(err, asyncio.CancelledError):
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.UNKNOWN


class Metrics:
    """One host's metrics, served over HTTP until close()."""

    def __init__(self, group: str, cfg: host_pb2.Metrics) -> None:
        ep = cfg.listener.endpoint
        if ep.network != "tcp":
            raise ValueError(f"mesh.metrics: listener {endpoint_string(ep)}: "
                             "the metrics server listens on tcp only")
        if cfg.listener.fd > 2:
            raise ValueError(f"mesh.metrics: listener fd {cfg.listener.fd}: the Python host's "
                             "metrics server cannot serve an inherited socket; give fd 0 and the "
                             "address to listen on")
        host, _, port = ep.addr.rpartition(":")
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(REQUESTS, "Calls served, by component and method.",
                                ["group", "component", "method"], registry=self.registry)
        self.errors = Counter(
            ERRORS, "Calls served that failed, by component, method and gRPC status code.",
            ["group", "component", "method", "code"], registry=self.registry)
        self.duration = Histogram(DURATION, "Time to serve a call, by component and method.",
                                  ["group", "component", "method"],
                                  buckets=buckets(cfg.buckets), registry=self.registry)
        ProcessCollector(registry=self.registry)
        self.group = group
        server, thread = prometheus_client.start_http_server(
            int(port), addr=host.strip("[]"), registry=self.registry)
        self._server: WSGIServer = server
        self._thread: threading.Thread = thread

    def where(self) -> str:
        addr = self._server.server_address
        host, port = str(addr[0]), int(addr[1])
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def observe(self, component: str, method: str, seconds: float,
                code: grpc.StatusCode) -> None:
        """Counts one call served of component's method (pkg.Service/Method)."""
        self.duration.labels(self.group, component, method).observe(seconds)
        self.requests.labels(self.group, component, method).inc()
        if code != grpc.StatusCode.OK:
            self.errors.labels(self.group, component, method, GO_CODES[code]).inc()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
