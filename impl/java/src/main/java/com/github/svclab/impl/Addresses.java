package com.github.svclab.impl;

import java.net.InetSocketAddress;

/** host:port addresses as Go writes them ("127.0.0.1:80", "[::1]:80"). */
final class Addresses {
  private Addresses() {}

  static InetSocketAddress inet(String hostPort) {
    int i = hostPort.lastIndexOf(':');
    if (i < 0) {
      throw new IllegalArgumentException("address \"" + hostPort + "\": missing port");
    }
    String host = hostPort.substring(0, i);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int port;
    try {
      port = Integer.parseInt(hostPort.substring(i + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("address \"" + hostPort + "\": bad port");
    }
    return host.isEmpty() ? new InetSocketAddress(port) : new InetSocketAddress(host, port);
  }

  static String hostPort(InetSocketAddress a) {
    String h = a.getAddress() != null ? a.getAddress().getHostAddress() : a.getHostString();
    if (h.contains(":")) {
      h = "[" + h + "]";
    }
    return h + ":" + a.getPort();
  }
}
