package com.github.svclab.impl;

import com.google.protobuf.Message;
import io.grpc.MethodDescriptor;

/**
 * A client of one peer component, whatever its transport: a component calls
 * its dependencies only through this. The call's deadline, cancellation and
 * outgoing metadata come from the current {@link io.grpc.Context}; a failure
 * is a StatusRuntimeException with the peer's code and message.
 */
public interface Caller extends AutoCloseable {
  <Q extends Message, R extends Message> R call(MethodDescriptor<Q, R> method, Q request);

  @Override
  void close();
}
