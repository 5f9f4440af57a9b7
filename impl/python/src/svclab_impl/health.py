"""The standard health service, unary Check only, as the Go host registers it:
the empty service name is SERVING until the host drains, then NOT_SERVING;
another name is NOT_FOUND, as grpc-go's health server answers."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2

from .service import Service
from .status import RpcError


class Health:
    def __init__(self) -> None:
        self.serving = True

    def shutdown(self) -> None:
        self.serving = False

    async def check(self, req: health_pb2.HealthCheckRequest) -> health_pb2.HealthCheckResponse:
        if req.service:
            raise RpcError(grpc.StatusCode.NOT_FOUND, "unknown service")
        r = health_pb2.HealthCheckResponse
        return r(status=r.SERVING if self.serving else r.NOT_SERVING)

    def service(self) -> Service:
        return Service("grpc.health.v1.Health").add(
            "Check", health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse, self.check)
