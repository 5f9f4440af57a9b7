package com.github.svclab.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import org.junit.jupiter.api.Test;

class GrpcCallerTest {
  private static final Metadata.Key<String> KEY =
      Metadata.Key.of("x-test", Metadata.ASCII_STRING_MARSHALLER);

  @Test
  void closedChannelIsUnavailable() {
    Metadata trailers = new Metadata();
    trailers.put(KEY, "kept");
    StatusRuntimeException in = Status.UNKNOWN.withDescription("channel closed")
        .withCause(new ClosedChannelException()).asRuntimeException(trailers);
    StatusRuntimeException out = GrpcCaller.unavailableIfClosed(in);
    assertEquals(Status.Code.UNAVAILABLE, out.getStatus().getCode());
    assertEquals("connection closed: channel closed", out.getStatus().getDescription());
    assertEquals("kept", out.getTrailers().get(KEY));
  }

  @Test
  void otherFailuresUnchanged() {
    StatusRuntimeException[] cases = {
      Status.UNKNOWN.withDescription("app said no").asRuntimeException(),
      Status.UNKNOWN.withCause(new IOException("reset")).asRuntimeException(),
      Status.INTERNAL.withCause(new ClosedChannelException()).asRuntimeException(),
      Status.UNAVAILABLE.asRuntimeException(),
    };
    for (StatusRuntimeException e : cases) {
      assertSame(e, GrpcCaller.unavailableIfClosed(e));
    }
  }
}
