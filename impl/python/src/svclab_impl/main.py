"""Runs one svclab host in Python.

The config is a svclab.host.v1.HostConfig in the protobuf JSON mapping, from
SVCLAB_HOST_CONFIG or --config FILE, as the Go host reads it; or, to run a
component by hand, flags:

    python -m svclab_impl --app select --component selector --transport grpc \\
        --listen 127.0.0.1:9000
    python -m svclab_impl --app select --component frontend --transport http \\
        --listen 127.0.0.1:8080 --peer selector=grpc+tcp://127.0.0.1:9000

Exit status 0 after SIGTERM, SIGINT or Control.Stop; 1 with a message on
stderr for a config it cannot use; 2 for bad flags.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from google.protobuf import json_format

from ._gen.host.v1 import host_pb2
from .apps import ConfigError as AppConfigError
from .host import ConfigError, Host

CONFIG_ENV = "SVCLAB_HOST_CONFIG"


def parse_config(text: str, source: str) -> host_pb2.HostConfig:
    """Parses a HostConfig strictly: a field the host does not know is an error."""
    cfg = host_pb2.HostConfig()
    try:
        json_format.Parse(text, cfg)
    except json_format.ParseError as e:
        raise ConfigError(f"decode host config from {source}: {e}") from e
    return cfg


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="svclab-python-host", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", help="a HostConfig file (default: $SVCLAB_HOST_CONFIG)")
    p.add_argument("--deployment", default="manual")
    p.add_argument("--group", help="a label for ps; the config names the group")
    p.add_argument("--app")
    p.add_argument("--component")
    p.add_argument("--transport", choices=("grpc", "http"))
    p.add_argument("--listen", help="host:port, or a socket path with --network unix")
    p.add_argument("--network", default="tcp", choices=("tcp", "unix"))
    p.add_argument("--peer", action="append", default=[],
                   help="COMPONENT=TRANSPORT+NETWORK://ADDR, once per endpoint")
    p.add_argument("--app-config", default="{}", help="the [app] table as JSON")
    p.add_argument("--gateway", help="host:port of an http gateway for the component")
    return p


def config(argv: list[str], env: str | None) -> host_pb2.HostConfig:
    p = _parser()
    a = p.parse_args(argv)
    if a.config:
        with open(a.config, encoding="utf-8") as f:
            return parse_config(f.read(), a.config)
    if not a.app:
        if not env:
            p.error(f"no config: set {CONFIG_ENV}, or give --config or --app")
        return parse_config(env, CONFIG_ENV)
    if not (a.component and a.transport and a.listen):
        p.error("--app needs --component, --transport and --listen")
    cfg = host_pb2.HostConfig(
        deployment=a.deployment, app=a.app, config_json=a.app_config, transport=a.transport,
        group=a.component, components=[a.component], entry=a.component)
    lis = cfg.listeners[a.component]
    lis.endpoint.transport, lis.endpoint.network, lis.endpoint.addr = (
        a.transport, a.network, a.listen)
    if a.gateway:
        cfg.gateway.endpoint.transport, cfg.gateway.endpoint.network = "http", "tcp"
        cfg.gateway.endpoint.addr = a.gateway
    for peer in a.peer:
        name, eq, rest = peer.partition("=")
        transport, plus, rest = rest.partition("+")
        network, sep, addr = rest.partition("://")
        if not (name and eq and plus and sep):
            p.error(f"--peer {peer}: want COMPONENT=TRANSPORT+NETWORK://ADDR")
        cfg.peers[name].endpoints.add(transport=transport, network=network, addr=addr)
    return cfg


async def _run(cfg: host_pb2.HostConfig) -> None:
    host = Host(cfg)
    try:
        await host.build()
    except BaseException:
        await host.close()
        raise
    await host.run()


def main(argv: list[str] | None = None) -> None:
    try:
        cfg = config(sys.argv[1:] if argv is None else argv, os.environ.get(CONFIG_ENV))
    except (ConfigError, OSError) as e:
        sys.stderr.write(f"svclab python host: {e}\n")
        sys.exit(1)
    try:
        asyncio.run(_run(cfg))
    except (ConfigError, AppConfigError, OSError, ValueError) as e:
        sys.stderr.write(f"svclab python host: group {cfg.group}: {e}\n")
        sys.exit(1)
    # Everything is closed and said: leave without the interpreter's
    # finalization, where grpcio's core sometimes blocks for good after a
    # run that served many HTTP calls (seen as a host that logged its
    # served count and then ignored SIGTERM's grace, with no Python frame
    # left on its stack).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
