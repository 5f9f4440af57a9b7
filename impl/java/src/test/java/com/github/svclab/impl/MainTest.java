package com.github.svclab.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.svclab.impl.apps.Apps;
import com.github.svclab.impl.apps.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import svclab.host.v1.Host.HostConfig;

class MainTest {
  @Test
  void parsesTheDeployersConfig() {
    HostConfig c = Main.parse("{\"deployment\":\"d1\",\"app\":\"select\",\"configJson\":\"{}\",\"transport\":\"grpc\","
        + "\"group\":\"frontend\",\"components\":[\"frontend\"],\"entry\":\"frontend\","
        + "\"listeners\":{\"frontend\":{\"endpoint\":{\"transport\":\"grpc\",\"network\":\"tcp\",\"addr\":\"127.0.0.1:0\"},\"fd\":3}},"
        + "\"peers\":{\"selector\":{\"endpoints\":[{\"transport\":\"http\",\"network\":\"tcp\",\"addr\":\"127.0.0.1:9\"}]}},"
        + "\"control\":{\"endpoint\":{\"transport\":\"grpc\",\"network\":\"unix\",\"addr\":\"/tmp/c.sock\"}}}", "test");
    assertEquals("select", c.getApp());
    assertEquals(3, c.getListenersOrThrow("frontend").getFd());
    assertEquals("http", c.getPeersOrThrow("selector").getEndpoints(0).getTransport());
    // The proto field names are accepted too.
    assertEquals("{}", Main.parse("{\"config_json\":\"{}\"}", "test").getConfigJson());
  }

  @Test
  void refusesUnknownFields() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Main.parse("{\"app\":\"select\",\"bogusField\":1}", "SVCLAB_HOST_CONFIG"));
    assertTrue(e.getMessage().contains("bogusField"), e.getMessage());
  }

  @Test
  void flagsMakeAConfig() throws Exception {
    HostConfig c = Main.config(new String[] {"--app", "select", "--component=frontend", "--transport", "http",
        "--listen", "127.0.0.1:8080", "--peer", "selector=grpc+tcp://127.0.0.1:9000",
        "--peer", "selector=grpc+unix:///tmp/s.sock"}, null);
    assertEquals(java.util.List.of("frontend"), c.getComponentsList());
    assertEquals("127.0.0.1:8080", c.getListenersOrThrow("frontend").getEndpoint().getAddr());
    assertEquals(2, c.getPeersOrThrow("selector").getEndpointsCount());
    assertEquals("/tmp/s.sock", c.getPeersOrThrow("selector").getEndpoints(1).getAddr());
    assertThrows(Main.UsageException.class, () -> Main.config(new String[] {"--app", "select"}, null));
    assertThrows(Main.UsageException.class, () -> Main.config(new String[] {}, null));
    assertThrows(Main.UsageException.class, () -> Main.config(new String[] {"--app", "select", "--component", "f",
        "--transport", "grpc", "--listen", ":1", "--peer", "selector:9000"}, null));
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
    "select | {\"size\":\"huge\"} | size: must be",
    "select | {\"sise\":\"std\"} | unknown field \"sise\"",
    "select | {\"seed\":\"one\"} | seed: must be an integer",
    "select | [] | not a JSON object",
    "rpcops | {\"op\":\"fly\"} | op: must be one of",
    "rpcops | {\"string_len\":1} | string_len: must be between 2 and 1024",
    "rpcops | {\"string_len\":2.5} | string_len: must be an integer",
  })
  void appConfigsAreStrict(String app, String json, String want) {
    ConfigException e = assertThrows(ConfigException.class, () -> Apps.lookup(app).configure(json));
    assertTrue(e.getMessage().contains(want), e.getMessage());
  }

  @Test
  void appConfigDefaults() {
    Apps.lookup("select").configure("{}");
    Apps.lookup("select").configure("{\"size\":\"large\",\"seed\":12345678901234}");
    Apps.lookup("rpcops").configure("{\"op\":\"movie\",\"string_len\":1024}");
  }
}
