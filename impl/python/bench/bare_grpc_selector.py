"""The select app's selector as a bare grpcio server.

The generated servicer on a ``grpc.aio`` server, as the svclab Python host
uses, and nothing of the host (no deadline or metadata context, health
service, error mapping). It is the baseline scripts/bench/languages.sh
measures the Python host's gRPC serving against (docs/LANGUAGES.md,
"Overhead against the bare framework"); a bench source, never part of the
product::

    impl/python/.venv/bin/python impl/python/bench/bare_grpc_selector.py 127.0.0.1:9000
"""

from __future__ import annotations

import asyncio
import random
import signal
import sys

import grpc

from svclab_impl._gen.selector import selector_pb2 as pb
from svclab_impl._gen.selector import selector_pb2_grpc as pb_grpc


class BareSelector(pb_grpc.SelectorServicer):
    """Three elements of the request at random positions, as apps/select's selector."""

    async def Select(
        self, request: pb.SelectRequest, context: grpc.aio.ServicerContext
    ) -> pb.SelectResponse:
        n = len(request.values)
        if n == 0:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "values is empty")
        positions = [random.randrange(n) for _ in range(3)]
        return pb.SelectResponse(values=[request.values[p] for p in positions], positions=positions)


async def serve(addr: str) -> None:
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    pb_grpc.add_SelectorServicer_to_server(BareSelector(), server)
    if server.add_insecure_port(addr) == 0:
        raise SystemExit(f"bare grpcio selector: cannot listen on {addr}")
    await server.start()
    print(f"bare grpcio selector listening on {addr}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(None)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: bare_grpc_selector.py HOST:PORT")
    asyncio.run(serve(sys.argv[1]))
