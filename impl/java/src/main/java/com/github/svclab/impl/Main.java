package com.github.svclab.impl;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import sun.misc.Signal;
import svclab.host.v1.Host.Endpoint;
import svclab.host.v1.Host.EndpointSet;
import svclab.host.v1.Host.HostConfig;
import svclab.host.v1.Host.Listener;

/**
 * Runs one svclab host in Java. The config is a svclab.host.v1.HostConfig
 * in the protobuf JSON mapping, from SVCLAB_HOST_CONFIG or --config FILE,
 * as the Go host reads it; or, to run a component by hand, flags:
 *
 * <pre>
 *   java -jar svclab-java.jar --app select --component selector --transport grpc --listen 127.0.0.1:9000
 *   java -jar svclab-java.jar --app select --component frontend --transport http --listen 127.0.0.1:8080 \
 *       --peer selector=grpc+tcp://127.0.0.1:9000 [--app-config '{"size":"std"}'] [--gateway 127.0.0.1:8081]
 * </pre>
 *
 * Exit status 0 after SIGTERM, SIGINT or Control.Stop; 1 with a message on
 * stderr for a config it cannot use; 2 for bad flags.
 */
public final class Main {
  private Main() {}

  static final String CONFIG_ENV = "SVCLAB_HOST_CONFIG";

  public static void main(String[] args) {
    HostConfig cfg;
    try {
      cfg = config(args, System.getenv(CONFIG_ENV));
    } catch (UsageException e) {
      System.err.println("svclab java host: " + e.getMessage());
      System.err.println(USAGE);
      System.exit(2);
      return;
    } catch (IllegalArgumentException | IOException e) {
      System.err.println("svclab java host: " + e.getMessage());
      System.exit(1);
      return;
    }
    HostRunner host;
    try {
      host = new HostRunner(cfg);
    } catch (Exception e) {
      System.err.println("svclab java host: group " + cfg.getGroup() + ": " + message(e));
      System.exit(1);
      return;
    }
    Signal.handle(new Signal("TERM"), s -> host.stop());
    Signal.handle(new Signal("INT"), s -> host.stop());
    try {
      host.run();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    System.exit(0);
  }

  private static String message(Throwable e) {
    String m = e.getMessage();
    // Spring wraps a failed bind ("Port 8080 was already in use") in layers.
    for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
      if (c.getMessage() != null && (c instanceof IOException || c.getClass().getSimpleName().contains("PortInUse"))) {
        m = m + ": " + c.getMessage();
        break;
      }
    }
    return m == null ? e.toString() : m;
  }

  static final String USAGE = "usage: svclab-java [--config FILE] (or SVCLAB_HOST_CONFIG), or\n"
      + "       svclab-java --app APP --component NAME --transport grpc|http --listen ADDR [--network tcp|unix]\n"
      + "                   [--peer COMPONENT=TRANSPORT+NETWORK://ADDR]... [--app-config JSON] [--gateway ADDR]\n"
      + "                   [--deployment ID]";

  static final class UsageException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    UsageException(String m) {
      super(m);
    }
  }

  /** The host's config from the arguments and the environment variable's value (null if unset). */
  static HostConfig config(String[] args, String env) throws IOException {
    String file = null;
    String app = null;
    String comp = null;
    String transport = null;
    String listen = null;
    String network = "tcp";
    String appConfig = "{}";
    String gateway = null;
    String deployment = "manual";
    List<String> peers = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String v;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 0) {
        v = a.substring(eq + 1);
        a = a.substring(0, eq);
      } else if (a.startsWith("--") && i + 1 < args.length) {
        v = args[++i];
      } else {
        throw new UsageException("bad argument " + a);
      }
      switch (a.replaceFirst("^--", "-")) {
        case "-config":
          file = v;
          break;
        case "-app":
          app = v;
          break;
        case "-component":
          comp = v;
          break;
        case "-transport":
          transport = v;
          break;
        case "-listen":
          listen = v;
          break;
        case "-network":
          network = v;
          break;
        case "-peer":
          peers.add(v);
          break;
        case "-app-config":
          appConfig = v;
          break;
        case "-gateway":
          gateway = v;
          break;
        case "-deployment":
          deployment = v;
          break;
        case "-group":
          break; // as `svclab host --group`: a label for ps; the config names the group
        default:
          throw new UsageException("unknown flag " + a);
      }
    }
    if (file != null) {
      return parse(Files.readString(Path.of(file), StandardCharsets.UTF_8), file);
    }
    if (app == null) {
      if (env == null || env.isEmpty()) {
        throw new UsageException("no config: set " + CONFIG_ENV + ", or give --config or --app");
      }
      return parse(env, CONFIG_ENV);
    }
    if (comp == null || transport == null || listen == null) {
      throw new UsageException("--app needs --component, --transport and --listen");
    }
    HostConfig.Builder b = HostConfig.newBuilder()
        .setDeployment(deployment).setApp(app).setConfigJson(appConfig).setTransport(transport)
        .setGroup(comp).addComponents(comp).setEntry(comp)
        .putListeners(comp, Listener.newBuilder().setEndpoint(
            Endpoint.newBuilder().setTransport(transport).setNetwork(network).setAddr(listen)).build());
    if (gateway != null) {
      b.setGateway(Listener.newBuilder().setEndpoint(
          Endpoint.newBuilder().setTransport("http").setNetwork("tcp").setAddr(gateway)));
    }
    for (String p : peers) {
      int eq = p.indexOf('=');
      int sep = p.indexOf("://");
      int plus = p.indexOf('+');
      if (eq <= 0 || sep < 0 || plus < eq || plus > sep) {
        throw new UsageException("--peer " + p + ": want COMPONENT=TRANSPORT+NETWORK://ADDR");
      }
      String name = p.substring(0, eq);
      Endpoint ep = Endpoint.newBuilder().setTransport(p.substring(eq + 1, plus))
          .setNetwork(p.substring(plus + 1, sep)).setAddr(p.substring(sep + 3)).build();
      EndpointSet prev = b.getPeersMap().getOrDefault(name, EndpointSet.getDefaultInstance());
      b.putPeers(name, prev.toBuilder().addEndpoints(ep).build());
    }
    return b.build();
  }

  /** Parses a HostConfig strictly: a field the host does not know is an error. */
  static HostConfig parse(String json, String from) {
    HostConfig.Builder b = HostConfig.newBuilder();
    try {
      JsonFormat.parser().merge(json, b);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException("decode host config from " + from + ": " + e.getMessage(), e);
    }
    return b.build();
  }
}
