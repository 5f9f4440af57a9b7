"""What a call carries besides its message, on every transport: its deadline,
the metadata it arrived with, and the metadata its own calls send. Each is a
context variable, so a component's calls to its peers inherit them."""

from __future__ import annotations

import asyncio
import base64
import contextvars
import os
import sys
import time

from .status import RpcError, cancelled, deadline_exceeded

Metadata = tuple[tuple[str, str | bytes], ...]

#: The call's deadline, in the event loop's clock (loop.time()); None: none.
deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)
#: The metadata the call arrived with (-bin values as bytes).
incoming: contextvars.ContextVar[Metadata] = contextvars.ContextVar("incoming", default=())
#: Metadata every call made in this context sends, as Go's outgoing metadata.
outgoing: contextvars.ContextVar[Metadata] = contextvars.ContextVar("outgoing", default=())

#: SVCLAB_PROPAGATE_METADATA=1 makes a component's incoming metadata its
#: outgoing metadata (less the keys gRPC and HTTP reserve), as a tracing
#: interceptor would; the conformance suite sets it to see metadata cross a
#: host both ways.
PROPAGATE_ENV = "SVCLAB_PROPAGATE_METADATA"

#: Headers that describe the HTTP exchange, not the call (docs/TRANSPORTS.md).
HTTP_ONLY = frozenset({
    "accept", "accept-encoding", "connection", "content-length", "content-type", "keep-alive",
    "te", "transfer-encoding", "upgrade", "user-agent", "grpc-timeout", "host",
})

#: The marker tests look for in a host's stderr (Go's runtime.CutShortMarker).
CUT_SHORT = "cut short after"


def propagates(key: str) -> bool:
    return key not in HTTP_ONLY and not key.startswith(("grpc-", ":"))


def propagated(md: Metadata) -> Metadata:
    return tuple((k, v) for k, v in md if propagates(k))


def header_metadata(headers: list[tuple[bytes, bytes]]) -> Metadata:
    """HTTP headers as incoming metadata, as the http transport's server makes
    them: keys lower-cased, "-bin" values base64-decoded (padded or not), the
    exchange's own headers and undecodable values dropped."""
    out: list[tuple[str, str | bytes]] = []
    for raw_k, raw_v in headers:
        k = raw_k.decode("latin-1").lower()
        if k in HTTP_ONLY:
            continue
        v = raw_v.decode("latin-1")
        if k.endswith("-bin"):
            try:
                out.append((k, base64.b64decode(v + "=" * (-len(v) % 4), validate=True)))
            except ValueError:
                continue  # as grpc-go does: drop what does not decode
        else:
            out.append((k, v))
    return tuple(out)


def metadata_headers(md: Metadata) -> list[tuple[str, str]]:
    """Outgoing metadata as HTTP headers, binary values base64 without padding."""
    out = []
    for k, v in md:
        if isinstance(v, bytes):
            out.append((k, base64.b64encode(v).decode().rstrip("=")))
        else:
            out.append((k, v))
    return out


def remaining() -> float | None:
    """Seconds left before the deadline, or None without one."""
    dl = deadline.get()
    if dl is None:
        return None
    return dl - asyncio.get_running_loop().time()


def log(message: str) -> None:
    """A line on stderr, dated as Go's log package dates it."""
    sys.stderr.write(time.strftime("%Y/%m/%d %H:%M:%S ") + message + "\n")
    sys.stderr.flush()


def duration(seconds: float) -> str:
    """A duration as Go prints one rounded to the microsecond."""
    us = round(seconds * 1e6)
    if us == 0:
        return "0s"
    sign, us = ("-", -us) if us < 0 else ("", us)
    if us < 1000:
        return f"{sign}{us}µs"
    if us < 1_000_000:
        return f"{sign}{us / 1000:.6f}".rstrip("0").rstrip(".") + "ms"
    return f"{sign}{us / 1e6:.6f}".rstrip("0").rstrip(".") + "s"


async def sleep(component: str, micros: int) -> None:
    """The sleep_micros test knob: sleeps that long, or fails with
    DEADLINE_EXCEEDED (or is cancelled) when the call ends first, logging what
    cut it short, as Go's runtime.Sleep does."""
    if micros <= 0:
        return
    left = remaining()
    on_arrival = "none" if left is None else duration(left)
    loop = asyncio.get_running_loop()
    start = loop.time()
    want = micros / 1e6
    try:
        if left is not None and left < want:
            await asyncio.sleep(max(0.0, left))
            err: RpcError = deadline_exceeded()
        else:
            await asyncio.sleep(want)
            return
    except asyncio.CancelledError:
        err = cancelled()
        _cut(component, micros, loop.time() - start, err, on_arrival)
        raise
    _cut(component, micros, loop.time() - start, err, on_arrival)
    raise err


def _cut(component: str, micros: int, took: float, err: RpcError, on_arrival: str) -> None:
    log(f"{component}: sleep of {micros}µs {CUT_SHORT} {duration(took)} by {err.message} "
        f"(deadline on arrival: {on_arrival})")


def propagate_enabled() -> bool:
    return os.environ.get(PROPAGATE_ENV) == "1"
