"""The host's config: the deployer's HostConfig, flags, and the apps' strict [app] tables."""

from __future__ import annotations

import pytest

from svclab_impl import apps
from svclab_impl.host import ConfigError
from svclab_impl.main import config, parse_config


def test_parses_the_deployers_config() -> None:
    c = parse_config(
        '{"deployment":"d1","app":"select","configJson":"{}","transport":"grpc",'
        '"group":"frontend","components":["frontend"],"entry":"frontend",'
        '"listeners":{"frontend":{"endpoint":{"transport":"grpc","network":"tcp",'
        '"addr":"127.0.0.1:0"},"fd":3}},'
        '"peers":{"selector":{"endpoints":[{"transport":"http","network":"tcp",'
        '"addr":"127.0.0.1:9"}]}}}', "test")
    assert c.app == "select"
    assert c.listeners["frontend"].fd == 3
    assert c.peers["selector"].endpoints[0].transport == "http"
    assert parse_config('{"config_json":"{}"}', "test").config_json == "{}"


def test_refuses_unknown_fields() -> None:
    with pytest.raises(ConfigError, match="bogusField"):
        parse_config('{"app":"select","bogusField":1}', "SVCLAB_HOST_CONFIG")


def test_flags_make_a_config() -> None:
    c = config(["--app", "select", "--component", "frontend", "--transport", "http",
                "--listen", "127.0.0.1:8080", "--peer", "selector=grpc+tcp://127.0.0.1:9000",
                "--peer", "selector=grpc+unix:///tmp/s.sock"], None)
    assert list(c.components) == ["frontend"]
    assert c.listeners["frontend"].endpoint.addr == "127.0.0.1:8080"
    assert [e.addr for e in c.peers["selector"].endpoints] == ["127.0.0.1:9000", "/tmp/s.sock"]
    for bad in (["--app", "select"], [], ["--app", "select", "--component", "f", "--transport",
                                         "grpc", "--listen", ":1", "--peer", "selector:9000"]):
        with pytest.raises(SystemExit):
            config(bad, None)


@pytest.mark.parametrize(
    ("app", "text", "want"),
    [
        ("select", '{"size":"huge"}', "size: must be"),
        ("select", '{"size":""}', "size: must be"),
        ("select", '{"sise":"std"}', 'unknown field "sise"'),
        ("select", '{"seed":"one"}', "seed: must be an integer"),
        ("select", "[]", "not a JSON object"),
        ("rpcops", '{"op":"fly"}', "op: must be one of"),
        ("rpcops", '{"string_len":1}', "string_len: must be between 2 and 1024"),
        ("rpcops", '{"string_len":2.5}', "string_len: must be an integer"),
        ("rpcops", '{"string_len":true}', "string_len: must be an integer"),
    ],
)
def test_app_configs_are_strict(app: str, text: str, want: str) -> None:
    with pytest.raises(apps.ConfigError, match=want):
        apps.lookup(app).configure(text)


def test_app_config_defaults() -> None:
    apps.lookup("select").configure("{}")
    apps.lookup("select").configure('{"size":"large","seed":12345678901234}')
    apps.lookup("rpcops").configure('{"op":"movie","string_len":1024}')


def test_wrap64() -> None:
    assert apps.wrap64(2**63) == -(2**63)
    assert apps.wrap64(2 * (2**63 - 1) + 5) == 3
    assert apps.wrap64(-5) == -5
