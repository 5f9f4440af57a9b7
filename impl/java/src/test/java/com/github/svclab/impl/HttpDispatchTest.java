package com.github.svclab.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.svclab.impl.apps.RpcopsApp;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Metadata;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import svclab.rpcops.OpsGrpc;
import svclab.rpcops.Rpcops.StringResponse;

class HttpDispatchTest {
  static final ScheduledExecutorService TIMERS = Executors.newSingleThreadScheduledExecutor();

  @AfterAll
  static void stop() {
    TIMERS.shutdownNow();
  }

  /** Seen by the recording String handler. */
  static final AtomicReference<Metadata> SEEN_MD = new AtomicReference<>();
  static final AtomicReference<Deadline> SEEN_DEADLINE = new AtomicReference<>();

  static HttpDispatch dispatch() {
    Service ops = new RpcopsApp().build(RpcopsApp.OPS, Map.of());
    Service recording = new Service(OpsGrpc.getServiceDescriptor()).add(OpsGrpc.getStringMethod(), req -> {
      SEEN_MD.set(Calls.INCOMING.get());
      SEEN_DEADLINE.set(Context.current().getDeadline());
      return StringResponse.newBuilder().setValue(req.getValue()).build();
    });
    List<Service> services = new ArrayList<>();
    services.add(ops);
    // A second Ops whose String records: registered later, its route wins.
    services.add(recording);
    return new HttpDispatch(services, TIMERS);
  }

  static final class Headers implements HttpDispatch.Headers {
    final Map<String, List<String>> h = new LinkedHashMap<>();

    Headers with(String k, String v) {
      h.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
      return this;
    }

    @Override
    public String first(String name) {
      for (Map.Entry<String, List<String>> e : h.entrySet()) {
        if (e.getKey().equalsIgnoreCase(name)) {
          return e.getValue().get(0);
        }
      }
      return null;
    }

    @Override
    public Iterable<Map.Entry<String, List<String>>> all() {
      return h.entrySet();
    }
  }

  static HttpDispatch.Answer post(String path, String body, Headers h) {
    return dispatch().handle("POST", path, h, body.getBytes(StandardCharsets.UTF_8));
  }

  static String body(HttpDispatch.Answer a) {
    return new String(a.body(), StandardCharsets.UTF_8);
  }

  @Test
  void answersInProtojson() {
    HttpDispatch.Answer a = post("/svclab.rpcops.Ops/Long", "{\"value\":41,\"unknown\":[1]}", new Headers());
    assertEquals(200, a.status());
    assertEquals("application/json", a.headers().get("Content-Type"));
    assertEquals("{\"value\":\"42\"}", body(a)); // int64 as a string
    a = post("/svclab.rpcops.Ops/Long", "{\"value\":\"1\",\"sleep_micros\":\"1\"}", new Headers());
    assertEquals("{\"value\":\"2\"}", body(a)); // proto field names too
    a = post("/svclab.rpcops.Ops/Void", "", new Headers());
    assertEquals("{}", body(a)); // an empty body is the empty message
  }

  @Test
  void routesAndMethods() {
    HttpDispatch.Answer a = post("/svclab.rpcops.Ops/Nope", "{}", new Headers());
    assertEquals(404, a.status());
    assertEquals("12", a.headers().get("Grpc-Status"));
    a = dispatch().handle("GET", "/svclab.rpcops.Ops/Void", new Headers(), new byte[0]);
    assertEquals(405, a.status());
    assertEquals("POST", a.headers().get("Allow"));
    assertEquals("{\"code\":12,\"message\":\"http: /svclab.rpcops.Ops/Void takes POST, not GET\"}", body(a));
    assertEquals("http%3A+%2Fsvclab.rpcops.Ops%2FVoid+takes+POST%2C+not+GET", a.headers().get("Grpc-Message"));
  }

  @Test
  void badRequests() {
    HttpDispatch.Answer a = post("/svclab.rpcops.Ops/Long", "{\"value", new Headers());
    assertEquals(400, a.status());
    assertEquals("3", a.headers().get("Grpc-Status"));
    assertTrue(body(a).contains("http: decoding /svclab.rpcops.Ops/Long request"), body(a));
    a = post("/svclab.rpcops.Ops/Long", "{}", new Headers().with("Grpc-Timeout", "soon"));
    assertEquals(400, a.status());
    assertTrue(body(a).contains("Grpc-Timeout header"), body(a));
  }

  @Test
  void deadlineFromGrpcTimeout() {
    long start = System.nanoTime();
    HttpDispatch.Answer a = post("/svclab.rpcops.Ops/Void", "{\"sleepMicros\":\"5000000\"}",
        new Headers().with("Grpc-Timeout", "100m"));
    long took = System.nanoTime() - start;
    assertEquals(504, a.status());
    assertEquals("4", a.headers().get("Grpc-Status"));
    assertEquals("{\"code\":4,\"message\":\"context deadline exceeded\"}", body(a));
    assertTrue(took < TimeUnit.SECONDS.toNanos(2), "took " + took + "ns");

    post("/svclab.rpcops.Ops/String", "{}", new Headers().with("Grpc-Timeout", "2S"));
    long left = SEEN_DEADLINE.get().timeRemaining(TimeUnit.MILLISECONDS);
    assertTrue(left > 0 && left <= 2000, "left " + left);
    post("/svclab.rpcops.Ops/String", "{}", new Headers());
    assertNull(SEEN_DEADLINE.get());
  }

  @Test
  void headersBecomeMetadata() {
    post("/svclab.rpcops.Ops/String", "{}", new Headers()
        .with("X-Trace", "abc").with("X-Trace", "def")
        .with("X-Blob-Bin", "AAH+/w") // unpadded base64 of 00 01 fe ff
        .with("X-Bad-Bin", "!!!")
        .with("Content-Type", "application/json").with("User-Agent", "curl").with("Grpc-Timeout", "1S"));
    Metadata md = SEEN_MD.get();
    List<String> trace = new ArrayList<>();
    md.getAll(Metadata.Key.of("x-trace", Metadata.ASCII_STRING_MARSHALLER)).forEach(trace::add);
    assertEquals(List.of("abc", "def"), trace);
    byte[] blob = md.get(Metadata.Key.of("x-blob-bin", Metadata.BINARY_BYTE_MARSHALLER));
    assertEquals(4, blob.length);
    assertEquals((byte) 0xff, blob[3]);
    assertNull(md.get(Metadata.Key.of("x-bad-bin", Metadata.BINARY_BYTE_MARSHALLER)));
    assertNull(md.get(Metadata.Key.of("content-type", Metadata.ASCII_STRING_MARSHALLER)));
    assertNull(md.get(Metadata.Key.of("user-agent", Metadata.ASCII_STRING_MARSHALLER)));
    assertNull(md.get(Metadata.Key.of("grpc-timeout", Metadata.ASCII_STRING_MARSHALLER)));
  }
}
