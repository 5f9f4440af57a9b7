"""The ASGI application, driven as uvicorn drives it."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from svclab_impl import apps, calls
from svclab_impl._gen.rpcops import rpcops_pb2 as ops_pb
from svclab_impl.health import Health
from svclab_impl.http_serving import HttpApp
from svclab_impl.service import Service

Answer = tuple[int, dict[str, str], bytes]


def app() -> HttpApp:
    ops = apps.lookup("rpcops").build("ops", {})
    seen = Service("svclab.test.Seen")

    async def record(req: ops_pb.StringRequest) -> ops_pb.StringResponse:
        left = calls.remaining()
        return ops_pb.StringResponse(value=json.dumps({
            "md": [[k, v if isinstance(v, str) else v.hex()] for k, v in calls.incoming.get()],
            "left": left,
        }))

    seen.add("Record", ops_pb.StringRequest, ops_pb.StringResponse, record)
    return HttpApp([ops, Health().service(), seen])


async def request(method: str, path: str, body: bytes = b"",
                  headers: list[tuple[bytes, bytes]] | None = None,
                  disconnect_after: float | None = None) -> Answer:
    scope: dict[str, Any] = {"type": "http", "method": method, "path": path,
                             "headers": headers or []}
    sent: list[dict[str, Any]] = []
    first = True

    async def receive() -> dict[str, Any]:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": body, "more_body": False}
        if disconnect_after is None:
            await asyncio.Event().wait()
        await asyncio.sleep(disconnect_after or 0)
        return {"type": "http.disconnect"}

    async def send(msg: dict[str, Any]) -> None:
        sent.append(msg)

    await app()(scope, receive, send)
    start, resp = sent
    hs = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], hs, resp["body"]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_answers_in_protojson() -> None:
    st, hs, body = run(request("POST", "/svclab.rpcops.Ops/Long", b'{"value":41,"unknown":[1]}'))
    assert (st, hs["content-type"], json.loads(body)) == (200, "application/json", {"value": "42"})
    st, _, body = run(request("POST", "/svclab.rpcops.Ops/Long",
                              b'{"value":"1","sleep_micros":"1"}'))
    assert json.loads(body) == {"value": "2"}
    st, _, body = run(request("POST", "/svclab.rpcops.Ops/Void"))
    assert (st, json.loads(body)) == (200, {})
    st, _, body = run(request("POST", "/svclab.rpcops.Ops/Long",
                              b'{"value":"9223372036854775807"}'))
    assert json.loads(body) == {"value": "-9223372036854775808"}  # wraps as Go's int64


def test_routes_and_methods() -> None:
    st, hs, body = run(request("POST", "/svclab.rpcops.Ops/Nope", b"{}"))
    assert (st, hs["grpc-status"]) == (404, "12")
    st, hs, body = run(request("GET", "/svclab.rpcops.Ops/Void"))
    assert (st, hs["allow"], hs["grpc-status"]) == (405, "POST", "12")
    assert json.loads(body) == {"code": 12,
                                "message": "http: /svclab.rpcops.Ops/Void takes POST, not GET"}
    assert hs["grpc-message"] == "http%3A+%2Fsvclab.rpcops.Ops%2FVoid+takes+POST%2C+not+GET"


def test_bad_requests() -> None:
    st, hs, body = run(request("POST", "/svclab.rpcops.Ops/Long", b'{"value'))
    assert (st, hs["grpc-status"]) == (400, "3")
    assert json.loads(body)["message"].startswith("http: decoding /svclab.rpcops.Ops/Long request")
    st, _, body = run(request("POST", "/svclab.rpcops.Ops/Long", b"{}",
                              [(b"grpc-timeout", b"soon")]))
    assert st == 400
    assert "Grpc-Timeout header" in json.loads(body)["message"]


def test_deadline_from_grpc_timeout() -> None:
    start = time.monotonic()
    st, hs, body = run(request("POST", "/svclab.rpcops.Ops/Void", b'{"sleepMicros":"5000000"}',
                               [(b"grpc-timeout", b"100m")]))
    assert (st, hs["grpc-status"]) == (504, "4")
    assert json.loads(body) == {"code": 4, "message": "context deadline exceeded"}
    assert time.monotonic() - start < 2
    _, _, body = run(request("POST", "/svclab.test.Seen/Record", b"{}", [(b"grpc-timeout", b"2S")]))
    left = json.loads(json.loads(body)["value"])["left"]
    assert 0 < left <= 2
    _, _, body = run(request("POST", "/svclab.test.Seen/Record", b"{}"))
    assert json.loads(json.loads(body)["value"])["left"] is None


def test_client_that_goes_away_cancels_the_call(capsys: pytest.CaptureFixture[str]) -> None:
    start = time.monotonic()
    st, hs, _ = run(request("POST", "/svclab.rpcops.Ops/Void", b'{"sleepMicros":"5000000"}',
                            disconnect_after=0.1))
    assert (st, hs["grpc-status"]) == (499, "1")
    assert time.monotonic() - start < 2
    assert "ops: sleep of 5000000µs cut short after" in capsys.readouterr().err


def test_headers_become_incoming_metadata() -> None:
    _, _, body = run(request("POST", "/svclab.test.Seen/Record", b"{}", [
        (b"x-trace", b"abc"), (b"x-blob-bin", b"AAH+/w"), (b"content-type", b"application/json"),
    ]))
    md = json.loads(json.loads(body)["value"])["md"]
    assert md == [["x-trace", "abc"], ["x-blob-bin", "0001feff"]]


def test_health() -> None:
    st, _, body = run(request("POST", "/grpc.health.v1.Health/Check", b"{}"))
    assert (st, json.loads(body)) == (200, {"status": "SERVING"})
    st, hs, body = run(request("POST", "/grpc.health.v1.Health/Check", b'{"service":"x"}'))
    assert (st, hs["grpc-status"], json.loads(body)["message"]) == (404, "5", "unknown service")
