package com.github.svclab.impl;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The server side of svclab's http transport, apart from any web framework:
 * POST /pkg.Service/Method with the request in protojson, the response in
 * protojson, a failure as grpc-gateway's HTTP status with Grpc-Status,
 * Grpc-Message and a google.rpc.Status body; Grpc-Timeout becomes the call's
 * deadline and the other headers its incoming metadata
 * (docs/TRANSPORTS.md).
 */
public final class HttpDispatch {
  /** An answer: HTTP status, headers and body. */
  public record Answer(int status, Map<String, String> headers, byte[] body) {}

  /** A request's headers, by name as sent (any case), each with its values. */
  public interface Headers {
    String first(String name);

    Iterable<Map.Entry<String, List<String>>> all();
  }

  public static final String TIMEOUT_HEADER = "Grpc-Timeout";
  public static final String STATUS_HEADER = "Grpc-Status";
  public static final String MESSAGE_HEADER = "Grpc-Message";
  public static final String JSON = "application/json";

  static final JsonFormat.Parser PARSER = JsonFormat.parser().ignoringUnknownFields();
  static final JsonFormat.Printer PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();

  private final Map<String, Service.Method<?, ?>> routes = new HashMap<>();
  private final ScheduledExecutorService timers;

  public HttpDispatch(List<Service> services, ScheduledExecutorService timers) {
    for (Service s : services) {
      for (Service.Method<?, ?> m : s.methods()) {
        routes.put("/" + m.fullMethodName(), m);
      }
    }
    this.timers = timers;
  }

  /** Answers one request. */
  public Answer handle(String httpMethod, String path, Headers headers, byte[] body) {
    Service.Method<?, ?> m = routes.get(path);
    if (m == null) {
      return status(404, Status.UNIMPLEMENTED.withDescription("http: unknown method " + path));
    }
    if (!"POST".equals(httpMethod)) {
      Answer a = status(405, Status.UNIMPLEMENTED.withDescription("http: " + path + " takes POST, not " + httpMethod));
      a.headers().put("Allow", "POST");
      return a;
    }
    long timeout = -1;
    String t = headers.first(TIMEOUT_HEADER);
    if (t != null && !t.isEmpty()) {
      try {
        timeout = Timeouts.decode(t);
      } catch (IllegalArgumentException e) {
        return status(0, Status.INVALID_ARGUMENT.withDescription("http: " + TIMEOUT_HEADER + " header: " + e.getMessage()));
      }
    }
    Metadata md = new Metadata();
    for (Map.Entry<String, List<String>> h : headers.all()) {
      for (String v : h.getValue()) {
        Calls.addHeader(md, h.getKey(), v);
      }
    }
    Message req;
    try {
      req = decode(m, body);
    } catch (InvalidProtocolBufferException e) {
      return status(0, Status.INVALID_ARGUMENT.withDescription(
          "http: decoding " + path + " request: " + e.getMessage()));
    }
    Context ctx = Context.current().withValue(Calls.INCOMING, md);
    Context.CancellableContext cancellable = null;
    if (timeout >= 0) {
      cancellable = ctx.withDeadlineAfter(timeout, TimeUnit.NANOSECONDS, timers);
      ctx = cancellable;
    }
    Message resp;
    try {
      resp = ctx.call(() -> m.callUnchecked(req));
    } catch (StatusRuntimeException e) {
      return status(0, e.getStatus());
    } catch (Exception e) {
      return status(0, Status.UNKNOWN.withDescription(String.valueOf(e.getMessage())));
    } finally {
      if (cancellable != null) {
        cancellable.cancel(null);
      }
    }
    String out;
    try {
      out = PRINTER.print(resp);
    } catch (InvalidProtocolBufferException e) {
      return status(0, Status.INTERNAL.withDescription(
          "http: encoding " + path + " response: " + e.getMessage()));
    }
    Map<String, String> h = new HashMap<>();
    h.put("Content-Type", JSON);
    return new Answer(200, h, out.getBytes(StandardCharsets.UTF_8));
  }

  private static Message decode(Service.Method<?, ?> m, byte[] body) throws InvalidProtocolBufferException {
    if (body == null || body.length == 0) {
      return m.requestPrototype; // an empty body is the empty message
    }
    Message.Builder b = m.requestPrototype.newBuilderForType();
    PARSER.merge(new String(body, StandardCharsets.UTF_8), b);
    return b.build();
  }

  /** A failed call's answer; httpStatus 0 means the one the code maps to. */
  public static Answer status(int httpStatus, Status st) {
    if (httpStatus == 0) {
      httpStatus = HttpCodes.httpStatus(st.getCode());
    }
    String msg = st.getDescription() == null ? "" : st.getDescription();
    com.google.rpc.Status body = com.google.rpc.Status.newBuilder()
        .setCode(st.getCode().value()).setMessage(msg).build();
    String json;
    try {
      json = PRINTER.print(body);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(e);
    }
    Map<String, String> h = new HashMap<>();
    h.put("Content-Type", JSON);
    h.put(STATUS_HEADER, Integer.toString(st.getCode().value()));
    h.put(MESSAGE_HEADER, HttpCodes.queryEscape(msg));
    return new Answer(httpStatus, h, json.getBytes(StandardCharsets.UTF_8));
  }

  /** Whether the dispatcher has a route for path. */
  public boolean has(String path) {
    return routes.containsKey(path);
  }
}
