package com.github.svclab.impl;

import com.google.protobuf.Message;
import java.nio.channels.ClosedChannelException;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.Context;
import io.grpc.ForwardingClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.stub.ClientCalls;
import svclab.host.v1.Host;

/** A peer endpoint over the grpc transport: a grpc-java channel on Netty. */
final class GrpcCaller implements Caller {
  private final ManagedChannel channel;
  private final Channel intercepted;
  private final EventLoopGroup group;

  GrpcCaller(Host.Endpoint ep) {
    NettyChannelBuilder b;
    if ("unix".equals(ep.getNetwork())) {
      group = new EpollEventLoopGroup(1);
      b = NettyChannelBuilder.forAddress(new DomainSocketAddress(ep.getAddr()))
          .channelType(EpollDomainSocketChannel.class)
          .eventLoopGroup(group)
          .overrideAuthority("localhost");
    } else {
      group = null;
      b = NettyChannelBuilder.forTarget("dns:///" + ep.getAddr());
    }
    channel = b.usePlaintext().build();
    intercepted = ClientInterceptors.intercept(channel, OUTGOING);
  }

  @Override
  public <Q extends Message, R extends Message> R call(MethodDescriptor<Q, R> method, Q request) {
    // The current Context's deadline and cancellation apply to the call.
    try {
      return ClientCalls.blockingUnaryCall(intercepted, method, CallOptions.DEFAULT, request);
    } catch (StatusRuntimeException e) {
      throw unavailableIfClosed(e);
    }
  }

  /**
   * grpc-java reports a write to a connection the peer has just closed as UNKNOWN "channel
   * closed" (a Netty ClosedChannelException), where grpc-go says UNAVAILABLE. The caller's
   * balancer, retries and the conformance suite treat a replica that went away as
   * UNAVAILABLE on every language, so this says so too.
   */
  static StatusRuntimeException unavailableIfClosed(StatusRuntimeException e) {
    Status s = e.getStatus();
    if (s.getCode() == Status.Code.UNKNOWN && s.getCause() instanceof ClosedChannelException) {
      return Status.UNAVAILABLE.withDescription("connection closed: " + s.getDescription())
          .withCause(s.getCause()).asRuntimeException(e.getTrailers());
    }
    return e;
  }

  @Override
  public void close() {
    channel.shutdown(); // calls in flight finish
    if (group != null) {
      group.shutdownGracefully();
    }
  }

  /** Sends the Context's outgoing metadata with every call. */
  private static final ClientInterceptor OUTGOING = new ClientInterceptor() {
    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> m, CallOptions o, Channel next) {
      Metadata out = Calls.OUTGOING.get(Context.current());
      if (out == null) {
        return next.newCall(m, o);
      }
      return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(next.newCall(m, o)) {
        @Override
        public void start(Listener<R> listener, Metadata headers) {
          headers.merge(out);
          super.start(listener, headers);
        }
      };
    }
  };
}
