package com.github.svclab.impl;

import svclab.host.v1.Host;

/** Endpoints of the host protocol. */
public final class Endpoints {
  private Endpoints() {}

  /** Transports a host in Java or Python speaks; netrpc (gob) is Go's alone. */
  public static final java.util.Set<String> TRANSPORTS = java.util.Set.of("grpc", "http");

  /** As Go's runtime.Endpoint prints it: transport+network://addr. */
  public static String string(Host.Endpoint e) {
    return e.getTransport() + "+" + e.getNetwork() + "://" + e.getAddr();
  }

  /** A client of the endpoint over its transport. */
  public static Caller dial(Host.Endpoint e) {
    check(e);
    return "grpc".equals(e.getTransport()) ? new GrpcCaller(e) : new HttpCaller(e);
  }

  /** Fails with a message naming the endpoint when the host cannot use it. */
  public static void check(Host.Endpoint e) {
    if (!TRANSPORTS.contains(e.getTransport())) {
      throw new IllegalArgumentException("endpoint " + string(e) + ": transport \"" + e.getTransport()
          + "\" is not spoken by the Java host (grpc, http; netrpc is Go-only)");
    }
    if (!"tcp".equals(e.getNetwork()) && !"unix".equals(e.getNetwork())) {
      throw new IllegalArgumentException("endpoint " + string(e) + ": network \"" + e.getNetwork()
          + "\" is neither tcp nor unix");
    }
  }
}
