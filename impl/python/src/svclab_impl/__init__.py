"""svclab's Python implementations of the select and rpcops apps.

A host (``svclab_impl.main``) runs one component of an app, as the Go host
runs a group: over the grpc transport (grpcio's asyncio server) or the
http transport (plain ASGI on uvicorn), speaking the same wire as Go's
(docs/TRANSPORTS.md, docs/LANGUAGES.md).
"""

import os as _os

# grpcio's core logs at INFO otherwise (GOAWAY on every peer that stops).
_os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
