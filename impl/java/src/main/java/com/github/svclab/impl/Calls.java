package com.github.svclab.impl;

import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Base64;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * What a call carries besides its message, in grpc-java's {@link Context} on
 * every transport: its deadline and cancellation (the Context's own), the
 * metadata it arrived with, and the metadata to send on the calls it makes.
 */
public final class Calls {
  private Calls() {}

  /** The metadata a call arrived with: gRPC headers, or HTTP headers on http. */
  public static final Context.Key<Metadata> INCOMING = Context.key("svclab-incoming-metadata");

  /** Metadata every call made from this context sends, as Go's outgoing metadata. */
  public static final Context.Key<Metadata> OUTGOING = Context.key("svclab-outgoing-metadata");

  /**
   * SVCLAB_PROPAGATE_METADATA=1 makes a component's incoming metadata its
   * outgoing metadata (less the keys gRPC and HTTP reserve), as a tracing
   * interceptor would. The conformance suite sets it to see metadata cross
   * a host both ways; nothing else does.
   */
  public static final String PROPAGATE_ENV = "SVCLAB_PROPAGATE_METADATA";

  /** Headers that describe the HTTP exchange, not the call (docs/TRANSPORTS.md). */
  public static final Set<String> HTTP_ONLY = Set.of(
      "accept", "accept-encoding", "connection", "content-length", "content-type", "keep-alive",
      "te", "transfer-encoding", "upgrade", "user-agent", "grpc-timeout", "host");

  /** Whether a key may be propagated from incoming to outgoing metadata. */
  public static boolean propagates(String key) {
    return !HTTP_ONLY.contains(key) && !key.startsWith("grpc-") && !key.startsWith(":");
  }

  /** The metadata keys to propagate, a copy; null when there are none. */
  public static Metadata propagated(Metadata in) {
    if (in == null) {
      return null;
    }
    Metadata out = new Metadata();
    boolean any = false;
    for (String k : in.keys()) {
      if (!propagates(k)) {
        continue;
      }
      any = true;
      if (k.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
        Metadata.Key<byte[]> key = Metadata.Key.of(k, Metadata.BINARY_BYTE_MARSHALLER);
        for (byte[] v : in.getAll(key)) {
          out.put(key, v);
        }
      } else {
        Metadata.Key<String> key = Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER);
        for (String v : in.getAll(key)) {
          out.put(key, v);
        }
      }
    }
    return any ? out : null;
  }

  /**
   * Adds one HTTP header to metadata as the http transport's server does:
   * the key lower-cased, a "-bin" value base64-decoded (padded or not), and
   * what does not decode or is no valid metadata key dropped.
   */
  public static void addHeader(Metadata md, String name, String value) {
    String k = name.toLowerCase(Locale.ROOT);
    if (HTTP_ONLY.contains(k)) {
      return;
    }
    try {
      if (k.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
        // Padded or not: java.util's decoder takes both, as the transport must.
        byte[] b = Base64.getDecoder().decode(value);
        md.put(Metadata.Key.of(k, Metadata.BINARY_BYTE_MARSHALLER), b);
      } else {
        md.put(Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER), value);
      }
    } catch (IllegalArgumentException e) {
      // as grpc-go does: drop what does not decode
    }
  }

  /** The status a call's context ended with: its deadline, or a cancellation. */
  public static StatusRuntimeException ended(Context ctx) {
    Deadline dl = ctx.getDeadline();
    if (dl != null && dl.isExpired()) {
      return Status.DEADLINE_EXCEEDED.withDescription("context deadline exceeded").asRuntimeException();
    }
    return Status.CANCELLED.withDescription("context canceled").asRuntimeException();
  }

  /** The marker tests look for in a host's stderr (Go's runtime.CutShortMarker). */
  public static final String CUT_SHORT = "cut short after";

  /**
   * The sleep_micros test knob: sleeps that long, or returns early with
   * DEADLINE_EXCEEDED or CANCELLED when the call's context ends first,
   * logging what cut it short, as Go's runtime.Sleep does.
   */
  public static void sleep(String component, long micros) {
    if (micros <= 0) {
      return;
    }
    Context ctx = Context.current();
    Deadline dl = ctx.getDeadline();
    long start = System.nanoTime();
    String onArrival = dl == null ? "none" : Log.duration(dl.timeRemaining(TimeUnit.NANOSECONDS));
    CountDownLatch ended = new CountDownLatch(1);
    Context.CancellationListener l = c -> ended.countDown();
    ctx.addListener(l, Runnable::run);
    try {
      if (!ended.await(micros, TimeUnit.MICROSECONDS)) {
        return;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted").asRuntimeException();
    } finally {
      ctx.removeListener(l);
    }
    StatusRuntimeException err = ended(ctx);
    Log.printf("%s: sleep of %dµs %s %s by %s (deadline on arrival: %s)", component, micros, CUT_SHORT,
        Log.duration(System.nanoTime() - start), err.getStatus().getDescription(), onArrival);
    throw err;
  }
}
