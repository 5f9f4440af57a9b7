"""A component's implementation of one protobuf service, apart from any
transport: an async handler per unary method, keyed by the method's full
name (/pkg.Service/Method). grpc_serving and http_serving bind it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import Message

Handler = Callable[[Any], Awaitable[Message]]
#: Wraps a call, as a gRPC server interceptor would: (full method, call) -> answer.
Interceptor = Callable[[str, Callable[[], Awaitable[Message]]], Awaitable[Message]]


@dataclass(frozen=True)
class Method:
    name: str  # the method's name, e.g. "Select"
    request: type[Message]
    response: type[Message]
    handler: Handler


@dataclass
class Service:
    """The methods of one service (e.g. svclab.selector.Selector)."""

    full_name: str
    methods: dict[str, Method] = field(default_factory=dict)

    def add(self, name: str, request: type[Message], response: type[Message],
            handler: Handler) -> Service:
        self.methods[name] = Method(name, request, response, handler)
        return self

    def path(self, method: str) -> str:
        return f"/{self.full_name}/{method}"

    def intercept(self, interceptor: Interceptor) -> Service:
        """This service with every handler wrapped by interceptor."""
        out = Service(self.full_name)
        for m in self.methods.values():
            out.methods[m.name] = Method(m.name, m.request, m.response,
                                         _wrap(self.path(m.name), m.handler, interceptor))
        return out


def _wrap(path: str, handler: Handler, interceptor: Interceptor) -> Handler:
    async def wrapped(req: Any) -> Message:
        return await interceptor(path, lambda: handler(req))

    return wrapped
