"""The http wire's pieces: timeouts, status mapping, escaping, metadata."""

from __future__ import annotations

import math

import pytest

from svclab_impl import calls, status, timeouts


@pytest.mark.parametrize(
    ("seconds", "want"),
    [
        (0, "0n"),
        (-1, "0n"),
        (1e-9, "1n"),
        (0.099999999, "99999999n"),
        (0.1, "100000u"),
        (2.0, "2000000u"),
        (3600.0, "3600000m"),
    ],
)
def test_encode_timeout_as_go(seconds: float, want: str) -> None:
    assert timeouts.encode(seconds) == want


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("100m", 0.1), ("2S", 2.0), ("500u", 0.0005), ("1M", 60.0), ("1H", 3600.0), ("0n", 0.0)],
)
def test_decode_timeout(header: str, seconds: float) -> None:
    assert timeouts.decode(header) == pytest.approx(seconds)


@pytest.mark.parametrize("header", ["", "m", "1", "1x", "+1m", "-1m", "1.5S", "123456789m", "soon"])
def test_decode_timeout_refuses(header: str) -> None:
    with pytest.raises(ValueError, match="timeout"):
        timeouts.decode(header)


def test_status_mapping_both_ways() -> None:
    # docs/TRANSPORTS.md, "Status codes".
    want = [200, 499, 500, 400, 504, 404, 409, 403, 429, 400, 409, 400, 501, 500, 503, 500, 401]
    assert [status.http_status(c) for c in range(17)] == want
    back = {200: 0, 400: 3, 401: 16, 403: 7, 404: 5, 409: 10, 429: 8, 499: 1, 500: 13, 501: 12,
            502: 14, 503: 14, 504: 4, 418: 2, 302: 2}
    assert {h: status.code_of_http(h) for h in back} == back


def test_query_escape_as_go() -> None:
    # What Go's url.QueryEscape writes for the same text.
    assert (status.query_escape("http: /svclab.rpcops.Frontend/Void takes POST, not GET")
            == "http%3A+%2Fsvclab.rpcops.Frontend%2FVoid+takes+POST%2C+not+GET")
    assert status.query_escape("a-b_c.d~e*f'()!") == "a-b_c.d~e%2Af%27%28%29%21"
    assert status.query_escape("ü—🙂") == "%C3%BC%E2%80%94%F0%9F%99%82"
    s = "recorder: ünïcödé — 🙂 spaces/slashes?&=%+"
    assert status.query_unescape(status.query_escape(s)) == s


def test_headers_become_metadata() -> None:
    md = calls.header_metadata([
        (b"x-trace", b"abc"), (b"X-Trace", b"def"),
        (b"x-blob-bin", b"AAH+/w"),  # unpadded base64 of 00 01 fe ff
        (b"x-pad-bin", b"AAH+/w=="),
        (b"x-bad-bin", b"!!!"),
        (b"content-type", b"application/json"), (b"user-agent", b"curl"),
        (b"grpc-timeout", b"1S"), (b"host", b"localhost"),
    ])
    assert md == (("x-trace", "abc"), ("x-trace", "def"), ("x-blob-bin", b"\x00\x01\xfe\xff"),
                  ("x-pad-bin", b"\x00\x01\xfe\xff"))
    assert calls.metadata_headers(md[2:3]) == [("x-blob-bin", "AAH+/w")]


def test_propagation_keeps_the_calls_own_keys() -> None:
    md: calls.Metadata = (("x-a", "1"), (":authority", "h"), ("grpc-accept-encoding", "gzip"),
                          ("user-agent", "grpc-go"), ("x-b-bin", b"\x00"))
    assert calls.propagated(md) == (("x-a", "1"), ("x-b-bin", b"\x00"))


@pytest.mark.parametrize(
    ("seconds", "want"),
    [(0, "0s"), (45e-6, "45µs"), (0.2001, "200.1ms"), (1.5, "1.5s"), (-0.001, "-1ms")],
)
def test_duration_as_go(seconds: float, want: str) -> None:
    assert calls.duration(seconds) == want


def _grid(seconds: float) -> float:
    return 1e-3 if seconds < 1 else 10.0 ** (math.floor(math.log10(seconds)) - 2)


@pytest.mark.parametrize("left", [0.0025, 0.25, 0.999, 1.0, 9.998, 10.0, 10.00003, 99.99, 250.0])
def test_for_grpcio_never_sends_more_than_left(left: float) -> None:
    """grpcio's core rounds a timeout up to its grid (1 ms under 1 s, 10 ms
    under 10 s, 100 ms under 100 s...): the timeout handed to it, rounded up
    so, is at most what is left, and less by at most two of left's steps."""
    t = timeouts.for_grpcio(left)
    sent = math.ceil(round(t / _grid(t), 9)) * _grid(t)
    assert sent <= left + 1e-9
    assert left - sent <= 2 * _grid(left) + 1e-9
