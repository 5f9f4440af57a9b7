"""The frontend of the exec app's test system: an HTTP server (standard
library only) that counts each visit in Redis and fetches the page nginx
serves PAGES times (default 1) per call. It listens on the address in
argv[1] and finds its callees in REDIS_ADDR and STATIC_ADDR, as svclab's
templates give them: each a host:port, or a unix socket's path. It hands
its calls to nginx the trace context of the call it serves (traceparent),
so that with sidecars and deploy.tracing a request's spans join in one
trace."""

import http.client
import http.server
import json
import socket
import socketserver
import sys
import threading

REDIS = None
STATIC = None
PAGES = 1
local = threading.local()


def addr(s):
    """A host:port as a (host, port) pair; a unix socket's path as it is."""
    if s.startswith("/"):
        return s
    host, port = s.rsplit(":", 1)
    return host, int(port)


def connect(a):
    if isinstance(a, str):
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(5)
        conn.connect(a)
        return conn
    return socket.create_connection(a)


class StaticConnection(http.client.HTTPConnection):
    """An HTTP connection to STATIC, over TCP or a unix socket."""

    def __init__(self):
        host, port = STATIC if not isinstance(STATIC, str) else ("localhost", 80)
        super().__init__(host, port, timeout=5)

    def connect(self):
        if isinstance(STATIC, str):
            self.sock = connect(STATIC)
        else:
            super().connect()


def redis(*args):
    """One command over RESP on this thread's connection."""
    conn = getattr(local, "redis", None)
    if conn is None:
        conn = connect(REDIS)
        local.redis = conn
        local.rfile = conn.makefile("rb")
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    conn.sendall(out)
    line = local.rfile.readline()
    if line[:1] in (b":", b"+"):
        return line[1:].strip().decode()
    raise RuntimeError("redis: " + line.decode(errors="replace"))


def page():
    conn = getattr(local, "static", None)
    if conn is None:
        conn = StaticConnection()
        local.static = conn
    tp = getattr(local, "traceparent", None)
    conn.request("GET", "/index.html", headers={"traceparent": tp} if tp else {})
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200:
        raise RuntimeError("static: %d" % resp.status)
    return body


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without TCP_NODELAY the body
    # waits for the client's delayed ACK of the headers (40 ms).
    disable_nagle_algorithm = True

    def do_GET(self):
        if self.path == "/healthz":
            return self.answer(200, b"ok\n")
        if self.path == "/":
            local.traceparent = self.headers.get("traceparent")
            try:
                hits = int(redis("INCR", "hits"))
                for _ in range(PAGES):
                    body = page()
            except Exception as e:  # the callee's error, to the client
                # A connection that failed is not reused: the next call on
                # this thread (the same client connection, when a proxy
                # keeps it alive) opens a new one.
                for k in ("redis", "rfile", "static"):
                    local.__dict__.pop(k, None)
                return self.answer(502, ("%s\n" % e).encode())
            return self.answer(200, json.dumps({"hits": hits, "page_bytes": len(body)}).encode() + b"\n")
        self.answer(404, b"not found\n")

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

    def address_string(self):
        return str(self.client_address)


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    global REDIS, STATIC, PAGES
    import os

    REDIS = addr(os.environ["REDIS_ADDR"])
    STATIC = addr(os.environ["STATIC_ADDR"])
    PAGES = int(os.environ.get("PAGES", "1"))
    listen = addr(sys.argv[1])
    if isinstance(listen, str):
        Handler.disable_nagle_algorithm = False  # a TCP option
        server = UnixServer(listen, Handler)
    else:
        server = http.server.ThreadingHTTPServer(listen, Handler)
        server.daemon_threads = True
    print("frontend listening on", sys.argv[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
