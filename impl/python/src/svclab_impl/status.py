"""gRPC statuses on every transport, and the http transport's mapping to HTTP."""

from __future__ import annotations

from urllib.parse import quote_plus, unquote_plus

import grpc

CODES: dict[int, grpc.StatusCode] = {c.value[0]: c for c in grpc.StatusCode}


class RpcError(Exception):
    """A call's failure: a gRPC code and message, carried as is by every transport."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message

    @property
    def number(self) -> int:
        return int(self.code.value[0])


def deadline_exceeded() -> RpcError:
    return RpcError(grpc.StatusCode.DEADLINE_EXCEEDED, "context deadline exceeded")


def cancelled() -> RpcError:
    return RpcError(grpc.StatusCode.CANCELLED, "context canceled")


_TO_HTTP = {
    0: 200, 1: 499, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429,
    9: 400, 10: 409, 11: 400, 12: 501, 13: 500, 14: 503, 15: 500, 16: 401,
}

_FROM_HTTP = {
    200: 0, 400: 3, 401: 16, 403: 7, 404: 5, 409: 10, 429: 8, 499: 1,
    500: 13, 501: 12, 502: 14, 503: 14, 504: 4,
}


def http_status(code: int) -> int:
    """grpc-gateway's HTTP status for a gRPC code (docs/TRANSPORTS.md)."""
    return _TO_HTTP.get(code, 500)


def code_of_http(status: int) -> int:
    """The gRPC code of an HTTP answer without a gRPC status of its own."""
    return _FROM_HTTP.get(status, 2)


def query_escape(s: str) -> str:
    """Go's url.QueryEscape: unreserved bytes stay, space is '+', the rest %XX."""
    return quote_plus(s, safe="")


def query_unescape(s: str) -> str:
    return unquote_plus(s)
