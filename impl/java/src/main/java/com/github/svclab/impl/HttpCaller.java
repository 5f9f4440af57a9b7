package com.github.svclab.impl;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import svclab.host.v1.Host;

/**
 * A peer endpoint over the http transport, with the JDK's HTTP/1.1 client
 * (connections kept alive and reused): the request in protojson, the
 * deadline as Grpc-Timeout, outgoing metadata as headers, and a failed
 * answer turned back into its exact gRPC status.
 */
final class HttpCaller implements Caller {
  private final HttpClient client;
  private final String base;

  HttpCaller(Host.Endpoint ep) {
    if (!"tcp".equals(ep.getNetwork())) {
      throw new IllegalArgumentException("endpoint " + Endpoints.string(ep)
          + ": the Java host's http client speaks tcp only");
    }
    client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    base = "http://" + ep.getAddr();
  }

  @Override
  public <Q extends Message, R extends Message> R call(MethodDescriptor<Q, R> method, Q request) {
    Context ctx = Context.current();
    if (ctx.isCancelled()) {
      throw Calls.ended(ctx);
    }
    String path = "/" + method.getFullMethodName();
    byte[] body;
    try {
      body = HttpDispatch.PRINTER.print(request).getBytes(StandardCharsets.UTF_8);
    } catch (InvalidProtocolBufferException e) {
      throw Status.INTERNAL.withDescription("http: encoding " + path + " request: " + e.getMessage())
          .asRuntimeException();
    }
    HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(base + path))
        .POST(HttpRequest.BodyPublishers.ofByteArray(body))
        .header("Content-Type", HttpDispatch.JSON);
    Deadline dl = ctx.getDeadline();
    if (dl != null) {
      rb.header(HttpDispatch.TIMEOUT_HEADER, Timeouts.encode(dl.timeRemaining(TimeUnit.NANOSECONDS)));
    }
    Metadata out = Calls.OUTGOING.get(ctx);
    if (out != null) {
      for (String k : out.keys()) {
        if (k.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
          for (byte[] v : out.getAll(Metadata.Key.of(k, Metadata.BINARY_BYTE_MARSHALLER))) {
            rb.header(k, Base64.getEncoder().withoutPadding().encodeToString(v));
          }
        } else {
          for (String v : out.getAll(Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER))) {
            rb.header(k, v);
          }
        }
      }
    }
    HttpResponse<byte[]> resp = send(ctx, rb.build(), path);
    if (resp.statusCode() != 200) {
      throw responseStatus(resp).asRuntimeException();
    }
    R proto = Service.prototype(method.getResponseMarshaller());
    Message.Builder b = proto.newBuilderForType();
    try {
      HttpDispatch.PARSER.merge(new String(resp.body(), StandardCharsets.UTF_8), b);
    } catch (InvalidProtocolBufferException e) {
      throw Status.INTERNAL.withDescription("http: decoding " + path + " response: " + e.getMessage())
          .asRuntimeException();
    }
    @SuppressWarnings("unchecked")
    R r = (R) b.build();
    return r;
  }

  /** Sends, returning early when the context's deadline or cancellation ends the call. */
  private HttpResponse<byte[]> send(Context ctx, HttpRequest req, String path) {
    CompletableFuture<HttpResponse<byte[]>> f = client.sendAsync(req, HttpResponse.BodyHandlers.ofByteArray());
    CountDownLatch ended = new CountDownLatch(1);
    Context.CancellationListener l = c -> ended.countDown();
    ctx.addListener(l, Runnable::run);
    f.whenComplete((r, e) -> ended.countDown());
    try {
      ended.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      f.cancel(true);
      throw Status.CANCELLED.withDescription("interrupted").asRuntimeException();
    } finally {
      ctx.removeListener(l);
    }
    if (!f.isDone() || ctx.isCancelled()) {
      f.cancel(true);
      throw Calls.ended(ctx);
    }
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted").asRuntimeException();
    } catch (CancellationException e) {
      throw Calls.ended(ctx);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof StatusRuntimeException) {
        throw (StatusRuntimeException) c;
      }
      throw Status.UNAVAILABLE.withDescription("http: " + path + ": " + c).withCause(c).asRuntimeException();
    }
  }

  /** The gRPC status of a failed answer: from its body, else its headers, else its HTTP status. */
  static Status responseStatus(HttpResponse<byte[]> resp) {
    String text = new String(resp.body(), StandardCharsets.UTF_8);
    com.google.rpc.Status.Builder sp = com.google.rpc.Status.newBuilder();
    try {
      HttpDispatch.PARSER.merge(text, sp);
      if (sp.getCode() != 0) {
        return Status.fromCodeValue(sp.getCode()).withDescription(sp.getMessage());
      }
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      // not a google.rpc.Status
    }
    String h = resp.headers().firstValue(HttpDispatch.STATUS_HEADER).orElse("");
    if (!h.isEmpty()) {
      try {
        int n = Integer.parseInt(h);
        if (n != 0) {
          String msg = HttpCodes.queryUnescape(resp.headers().firstValue(HttpDispatch.MESSAGE_HEADER).orElse(""));
          return Status.fromCodeValue(n).withDescription(msg);
        }
      } catch (NumberFormatException e) {
        // fall through to the HTTP status
      }
    }
    String msg = text.strip();
    if (msg.length() > 512) {
      msg = msg.substring(0, 512) + "...";
    }
    return Status.fromCode(HttpCodes.code(resp.statusCode()))
        .withDescription("http: " + resp.statusCode() + ": " + msg);
  }

  @Override
  public void close() {
    // The JDK client closes its idle connections when it is collected.
  }
}
