package com.github.svclab.impl;

import com.google.protobuf.Message;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCalls;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One component's implementation of one protobuf service, independent of
 * the transport: a handler per unary method, keyed by grpc-java's generated
 * {@link MethodDescriptor}. {@link #grpc()} binds it to a gRPC server,
 * {@link HttpDispatch} to HTTP routes.
 */
public final class Service {
  /** A unary method's implementation; it fails by throwing a StatusRuntimeException. */
  @FunctionalInterface
  public interface Handler<Q, R> {
    R handle(Q request);
  }

  /** One method: its descriptor, the request's default instance and its handler. */
  public static final class Method<Q extends Message, R extends Message> {
    final MethodDescriptor<Q, R> descriptor;
    final Q requestPrototype;
    final Handler<Q, R> handler;

    Method(MethodDescriptor<Q, R> descriptor, Handler<Q, R> handler) {
      this.descriptor = descriptor;
      this.requestPrototype = Service.prototype(descriptor.getRequestMarshaller());
      this.handler = handler;
    }

    /** Runs the handler, turning a failure that is not a status into UNKNOWN, as grpc-go does. */
    R call(Q request) {
      try {
        return handler.handle(request);
      } catch (StatusRuntimeException e) {
        throw e;
      } catch (RuntimeException e) {
        throw Status.UNKNOWN.withDescription(String.valueOf(e.getMessage())).withCause(e)
            .asRuntimeException();
      }
    }

    @SuppressWarnings("unchecked")
    R callUnchecked(Message request) {
      return call((Q) request);
    }

    public String fullMethodName() {
      return descriptor.getFullMethodName();
    }
  }

  /**
   * Wraps every call of a service, as a gRPC server interceptor would, on
   * every transport alike (the host's drain gate, metadata propagation).
   */
  @FunctionalInterface
  public interface Interceptor {
    Message intercept(String fullMethod, java.util.function.Supplier<Message> call);
  }

  private final ServiceDescriptor descriptor;
  private final List<Method<?, ?>> methods = new ArrayList<>();

  public Service(ServiceDescriptor descriptor) {
    this.descriptor = descriptor;
  }

  /** Adds a method; returns this. */
  public <Q extends Message, R extends Message> Service add(MethodDescriptor<Q, R> m, Handler<Q, R> h) {
    if (!descriptor.getMethods().contains(m)) {
      throw new IllegalArgumentException(m.getFullMethodName() + " is not a method of " + descriptor.getName());
    }
    methods.add(new Method<>(m, h));
    return this;
  }

  /** This service with every handler wrapped by i. */
  public Service intercept(Interceptor i) {
    Service out = new Service(descriptor);
    for (Method<?, ?> m : methods) {
      out.methods.add(wrap(m, i));
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  private static <Q extends Message, R extends Message> Method<Q, R> wrap(Method<Q, R> m, Interceptor i) {
    String name = m.fullMethodName();
    return new Method<>(m.descriptor, req -> (R) i.intercept(name, () -> m.call(req)));
  }

  public String name() {
    return descriptor.getName();
  }

  public List<Method<?, ?>> methods() {
    return Collections.unmodifiableList(methods);
  }

  /** The service as grpc-java serves it. Methods without a handler answer UNIMPLEMENTED. */
  public ServerServiceDefinition grpc() {
    ServerServiceDefinition.Builder b = ServerServiceDefinition.builder(descriptor);
    for (Method<?, ?> m : methods) {
      bind(b, m);
    }
    for (MethodDescriptor<?, ?> md : descriptor.getMethods()) {
      if (methods.stream().noneMatch(m -> m.descriptor == md)) {
        bindUnimplemented(b, md);
      }
    }
    return b.build();
  }

  private static <Q extends Message, R extends Message> void bind(ServerServiceDefinition.Builder b, Method<Q, R> m) {
    b.addMethod(m.descriptor, ServerCalls.asyncUnaryCall((req, obs) -> {
      R resp;
      try {
        resp = m.call(req);
      } catch (StatusRuntimeException e) {
        obs.onError(e);
        return;
      }
      obs.onNext(resp);
      obs.onCompleted();
    }));
  }

  private static <Q, R> void bindUnimplemented(ServerServiceDefinition.Builder b, MethodDescriptor<Q, R> md) {
    switch (md.getType()) {
      case UNARY:
        b.addMethod(md, ServerCalls.asyncUnaryCall((req, obs) -> ServerCalls.asyncUnimplementedUnaryCall(md, obs)));
        break;
      case SERVER_STREAMING:
        b.addMethod(md, ServerCalls.asyncServerStreamingCall(
            (req, obs) -> ServerCalls.asyncUnimplementedUnaryCall(md, obs)));
        break;
      default:
        b.addMethod(md, ServerCalls.asyncBidiStreamingCall(
            obs -> ServerCalls.asyncUnimplementedStreamingCall(md, obs)));
        break;
    }
  }

  /** The default instance of a protobuf marshaller's message type. */
  @SuppressWarnings("unchecked")
  static <T> T prototype(MethodDescriptor.Marshaller<T> m) {
    if (m instanceof MethodDescriptor.PrototypeMarshaller) {
      return ((MethodDescriptor.PrototypeMarshaller<T>) m).getMessagePrototype();
    }
    throw new IllegalArgumentException("not a protobuf marshaller: " + m);
  }
}
