"""Listeners over the grpc transport: one grpcio asyncio server."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import grpc

from . import calls
from ._gen.host.v1 import host_pb2
from .service import Method, Service
from .status import RpcError


def _handler(m: Method) -> grpc.RpcMethodHandler:
    async def unary(req: Any, context: grpc.aio.ServicerContext) -> Any:
        left = context.time_remaining()
        if left is not None:
            calls.deadline.set(asyncio.get_running_loop().time() + left)
        calls.incoming.set(tuple((k, v) for k, v in (context.invocation_metadata() or ())))
        try:
            return await m.handler(req)
        except RpcError as e:
            await context.abort(e.code, e.message)
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception as e:  # a plain error is UNKNOWN with its text, as in grpc-go
            await context.abort(grpc.StatusCode.UNKNOWN, str(e))

    return grpc.unary_unary_rpc_method_handler(
        unary, request_deserializer=m.request.FromString,
        response_serializer=m.response.SerializeToString)


def generic_handler(svc: Service) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        svc.full_name, {name: _handler(m) for name, m in svc.methods.items()})


class GrpcServing:
    """A grpc.aio server over the given services, listening on each endpoint."""

    def __init__(self, services: Sequence[Service]) -> None:
        # grpcio's default SO_REUSEPORT would let a second host bind a port in use.
        self.server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        self.server.add_generic_rpc_handlers(tuple(generic_handler(s) for s in services))

    def listen(self, e: host_pb2.Endpoint) -> str:
        """Binds e; returns where it serves, with the port the kernel picked."""
        where = f"grpc+{e.network}://{e.addr}"
        try:
            if e.network == "unix":
                self.server.add_insecure_port(f"unix:{e.addr}")
                return where
            port = self.server.add_insecure_port(e.addr)
        except RuntimeError as err:  # grpcio's "Failed to bind"
            raise OSError(f"listen {where}: {err}") from err
        if port == 0:
            raise OSError(f"listen {where}: cannot bind")
        host = e.addr.rsplit(":", 1)[0]
        return f"grpc+tcp://{host}:{port}"

    async def start(self) -> None:
        await self.server.start()

    async def stop(self, grace: float | None = None) -> None:
        await self.server.stop(grace)
