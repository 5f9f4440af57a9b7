package com.github.svclab.impl;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;
import svclab.host.v1.Host;

/** One listener over the grpc transport: grpc-java on Netty, on tcp or a unix socket. */
final class GrpcServing implements AutoCloseable {
  private final Server server;
  private final EventLoopGroup group;
  private final String where;

  GrpcServing(Host.Endpoint ep, List<Service> services) throws IOException {
    NettyServerBuilder b;
    if ("unix".equals(ep.getNetwork())) {
      group = new EpollEventLoopGroup();
      b = NettyServerBuilder.forAddress(new DomainSocketAddress(ep.getAddr()))
          .channelType(EpollServerDomainSocketChannel.class)
          .bossEventLoopGroup(group)
          .workerEventLoopGroup(group);
    } else {
      group = null;
      b = NettyServerBuilder.forAddress(Addresses.inet(ep.getAddr()));
    }
    for (Service s : services) {
      b.addService(ServerInterceptors.intercept(s.grpc(), INCOMING));
    }
    server = b.build().start();
    if ("unix".equals(ep.getNetwork())) {
      where = Endpoints.string(ep);
    } else {
      InetSocketAddress a = (InetSocketAddress) server.getListenSockets().get(0);
      where = "grpc+tcp://" + Addresses.hostPort(a);
    }
  }

  /** Where it serves, with the port the kernel picked. */
  String where() {
    return where;
  }

  @Override
  public void close() {
    server.shutdownNow();
    try {
      server.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (group != null) {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
  }

  /** Lets calls in flight finish, up to timeoutMillis, then closes. */
  void stopGracefully(long timeoutMillis) {
    server.shutdown();
    try {
      server.awaitTermination(timeoutMillis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    close();
  }

  /** Puts the call's headers into the Context as its incoming metadata. */
  private static final ServerInterceptor INCOMING = new ServerInterceptor() {
    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
        ServerCallHandler<Q, R> next) {
      return Contexts.interceptCall(Context.current().withValue(Calls.INCOMING, headers), call, headers, next);
    }
  };
}
