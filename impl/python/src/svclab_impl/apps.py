"""The select and rpcops apps, as the Go apps in apps/select and apps/rpcops
define them: the same components, services, dependencies and answers."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from . import calls
from ._gen.rpcops import rpcops_pb2 as ops_pb
from ._gen.selector import selector_pb2 as sel_pb
from .callers import Caller
from .service import Handler, Service
from .status import RpcError


class ConfigError(ValueError):
    """A bad [app] value, named by its key as Go's runtime.KeyErrorf words it."""


def _strict(app: str, text: str, keys: dict[str, type]) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise ConfigError(f"decode {app} config: {e}") from e
    if not isinstance(obj, dict):
        raise ConfigError(f"decode {app} config: not a JSON object: {text}")
    for k, v in obj.items():
        if k not in keys:
            raise ConfigError(f'decode {app} config: json: unknown field "{k}"')
        want = keys[k]
        if v is not None and (not isinstance(v, want) or isinstance(v, bool)):
            kind = "a string" if want is str else "an integer"
            raise ConfigError(f"{k}: must be {kind}, got {v!r}")
    return obj


_INT64 = 1 << 64


def wrap64(v: int) -> int:
    """v as Go's int64 arithmetic leaves it: wrapped around, two's complement."""
    v %= _INT64
    return v - _INT64 if v >= 1 << 63 else v


@dataclass(frozen=True)
class App:
    name: str
    components: tuple[str, ...]
    deps: dict[str, tuple[str, ...]]
    configure: Callable[[str], None]
    build: Callable[[str, dict[str, Caller]], Service]


# select (S3)

PICKS = 3


def _configure_select(text: str) -> None:
    c = _strict("select", text, {"size": str, "seed": int})
    size = c.get("size")
    size = "std" if size is None else size
    if size not in ("std", "large"):
        raise ConfigError(f'size: must be "std" or "large", got "{size}"')


async def _select(req: sel_pb.SelectRequest) -> sel_pb.SelectResponse:
    await calls.sleep("selector", req.sleep_micros)
    v = req.values
    if not v:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "selector: values is empty")
    resp = sel_pb.SelectResponse()
    for _ in range(PICKS):
        p = random.randrange(len(v))
        resp.positions.append(p)
        resp.values.append(v[p])
    return resp


def _build_select(component: str, peers: dict[str, Caller]) -> Service:
    if component == "frontend":
        nxt = peers["selector"]

        async def forward(req: sel_pb.SelectRequest) -> sel_pb.SelectResponse:
            return await nxt.call("/svclab.selector.Selector/Select", req, sel_pb.SelectResponse)

        return Service("svclab.selector.Frontend").add(
            "Select", sel_pb.SelectRequest, sel_pb.SelectResponse, forward)
    if component == "selector":
        return Service("svclab.selector.Selector").add(
            "Select", sel_pb.SelectRequest, sel_pb.SelectResponse, _select)
    raise ConfigError(f'app select has no component "{component}"')


# rpcops (S4)

OPERATIONS = ("void", "long", "eightlongs", "string", "movie")

_OPS = (
    ("Void", ops_pb.VoidRequest, ops_pb.VoidResponse),
    ("Long", ops_pb.LongRequest, ops_pb.LongResponse),
    ("EightLongs", ops_pb.EightLongsRequest, ops_pb.LongResponse),
    ("String", ops_pb.StringRequest, ops_pb.StringResponse),
    ("Movie", ops_pb.MovieRequest, ops_pb.MovieResponse),
)


def _configure_rpcops(text: str) -> None:
    c = _strict("rpcops", text, {"op": str, "string_len": int})
    op = c.get("op")
    op = "all" if op is None else op
    n = c.get("string_len")
    n = 16 if n is None else n
    if op != "all" and op not in OPERATIONS:
        raise ConfigError(f'op: must be one of {", ".join(OPERATIONS)} or "all", got "{op}"')
    if not 2 <= n <= 1024:
        raise ConfigError(f"string_len: must be between 2 and 1024, got {n}")


async def _void(req: ops_pb.VoidRequest) -> ops_pb.VoidResponse:
    await calls.sleep("ops", req.sleep_micros)
    return ops_pb.VoidResponse()


async def _long(req: ops_pb.LongRequest) -> ops_pb.LongResponse:
    await calls.sleep("ops", req.sleep_micros)
    return ops_pb.LongResponse(value=wrap64(req.value + 1))


async def _eight_longs(req: ops_pb.EightLongsRequest) -> ops_pb.LongResponse:
    await calls.sleep("ops", req.sleep_micros)
    total = req.v1 + req.v2 + req.v3 + req.v4 + req.v5 + req.v6 + req.v7 + req.v8
    return ops_pb.LongResponse(value=wrap64(total))


async def _string(req: ops_pb.StringRequest) -> ops_pb.StringResponse:
    await calls.sleep("ops", req.sleep_micros)
    return ops_pb.StringResponse(value=req.value)


async def _movie(req: ops_pb.MovieRequest) -> ops_pb.MovieResponse:
    await calls.sleep("ops", req.sleep_micros)
    resp = ops_pb.MovieResponse()
    resp.movie.CopyFrom(req.movie)
    resp.movie.sent = True
    return resp


def _build_rpcops(component: str, peers: dict[str, Caller]) -> Service:
    if component == "frontend":
        nxt = peers["ops"]
        svc = Service("svclab.rpcops.Frontend")
        for name, req, resp in _OPS:
            svc.add(name, req, resp, _forwarder(nxt, f"/svclab.rpcops.Ops/{name}", resp))
        return svc
    if component == "ops":
        handlers: dict[str, Handler] = {"Void": _void, "Long": _long, "EightLongs": _eight_longs,
                    "String": _string, "Movie": _movie}
        svc = Service("svclab.rpcops.Ops")
        for name, req, resp in _OPS:
            svc.add(name, req, resp, handlers[name])
        return svc
    raise ConfigError(f'app rpcops has no component "{component}"')


def _forwarder(nxt: Caller, method: str, resp: type[Any]) -> Any:
    async def forward(req: Any) -> Any:
        return await nxt.call(method, req, resp)

    return forward


APPS = {
    "select": App("select", ("frontend", "selector"), {"frontend": ("selector",)},
                  _configure_select, _build_select),
    "rpcops": App("rpcops", ("frontend", "ops"), {"frontend": ("ops",)},
                  _configure_rpcops, _build_rpcops),
}


def lookup(name: str) -> App:
    if name not in APPS:
        raise ConfigError(f'unknown app "{name}" (the Python host implements {sorted(APPS)})')
    return APPS[name]
