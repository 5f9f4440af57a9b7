package com.github.svclab.impl;

import com.google.protobuf.Message;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import svclab.host.v1.Host;

/**
 * The endpoint set of one peer component, called round robin. The deployer
 * may replace the set while calls run (Control.UpdatePeers); an endpoint
 * dropped from it is closed. An empty set fails calls with UNAVAILABLE.
 */
final class PeerSet implements Caller {
  private final String component;
  private volatile List<Caller> callers = List.of();
  private Map<String, Caller> byAddr = new LinkedHashMap<>();
  private final AtomicInteger next = new AtomicInteger();

  PeerSet(String component, Host.EndpointSet set) {
    this.component = component;
    update(set);
  }

  /** Checks a set before any change: known transports, no endpoint twice. */
  static void check(Host.EndpointSet set) {
    Set<String> seen = new HashSet<>();
    for (Host.Endpoint e : set.getEndpointsList()) {
      Endpoints.check(e);
      if (!seen.add(Endpoints.string(e))) {
        throw new IllegalArgumentException("endpoint " + Endpoints.string(e) + " is listed twice");
      }
    }
  }

  /** Replaces the set; endpoints kept keep their connections. */
  synchronized void update(Host.EndpointSet set) {
    check(set);
    Map<String, Caller> now = new LinkedHashMap<>();
    for (Host.Endpoint e : set.getEndpointsList()) {
      String k = Endpoints.string(e);
      Caller c = byAddr.remove(k);
      now.put(k, c != null ? c : Endpoints.dial(e));
    }
    for (Caller gone : byAddr.values()) {
      gone.close(); // grpc-java's shutdownNow; calls in flight on it fail
    }
    byAddr = now;
    callers = new ArrayList<>(now.values());
  }

  @Override
  public <Q extends Message, R extends Message> R call(MethodDescriptor<Q, R> method, Q request) {
    List<Caller> cs = callers;
    if (cs.isEmpty()) {
      throw Status.UNAVAILABLE.withDescription("no endpoints for component " + component).asRuntimeException();
    }
    Caller c = cs.get(Math.floorMod(next.getAndIncrement(), cs.size()));
    return c.call(method, request);
  }

  @Override
  public synchronized void close() {
    for (Caller c : byAddr.values()) {
      c.close();
    }
    byAddr = new LinkedHashMap<>();
    callers = List.of();
  }
}
