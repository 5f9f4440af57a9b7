package com.github.svclab.impl;

import com.github.svclab.impl.apps.App;
import com.github.svclab.impl.apps.Apps;
import com.github.svclab.impl.web.WebApp;
import com.google.protobuf.Message;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Status;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.springframework.context.ConfigurableApplicationContext;
import svclab.host.v1.ControlGrpc;
import svclab.host.v1.Host.DrainRequest;
import svclab.host.v1.Host.DrainResponse;
import svclab.host.v1.Host.EndpointSet;
import svclab.host.v1.Host.HostConfig;
import svclab.host.v1.Host.Listener;
import svclab.host.v1.Host.Mesh;
import svclab.host.v1.Host.StopRequest;
import svclab.host.v1.Host.StopResponse;
import svclab.host.v1.Host.UpdatePeersRequest;
import svclab.host.v1.Host.UpdatePeersResponse;

/**
 * A svclab host in Java (docs/DEPLOY.md, "Host protocol"): it runs the one
 * component of its group, serves it on each of its listeners (grpc on
 * grpc-java/Netty, http on Spring Boot/Tomcat) with the health service
 * beside it, serves the gateway and the Control service when asked, and
 * spreads its calls over each peer's endpoint set by {@code
 * transport_options.balancer} (PeerSet).
 */
public final class HostRunner {
  /** Starts the line a host writes to stderr once it serves. */
  public static final String READY_MARKER = "svclab host ready:";
  /**
   * Precedes, in the host's last line, the calls it admitted on its
   * listeners and gateway (Go's runtime.ServedMarker): a replica's share.
   */
  public static final String SERVED_MARKER = "served, on its listeners,";

  private final HostConfig cfg;
  private final String component;
  private final Map<String, PeerSet> peers = new TreeMap<>();
  private final InFlight calls = new InFlight();
  private final java.util.concurrent.atomic.AtomicLong served = new java.util.concurrent.atomic.AtomicLong();
  private final Health health = new Health();
  private final List<GrpcServing> grpcServers = new ArrayList<>();
  private final ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "svclab-deadlines");
    t.setDaemon(true);
    return t;
  });
  private final ScheduledExecutorService probes = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "svclab-health-probes");
    t.setDaemon(true);
    return t;
  });
  private ConfigurableApplicationContext web;
  private GrpcServing control;
  private Metrics metrics; // null without mesh.metrics
  private final List<String> where = new ArrayList<>();
  private final CountDownLatch done = new CountDownLatch(1);
  private volatile boolean graceful;

  /** Builds the group's component and binds every listener; run() serves. */
  public HostRunner(HostConfig cfg) throws IOException {
    this.cfg = cfg;
    if (cfg.getComponentsCount() != 1) {
      throw new IllegalArgumentException("the Java host runs one component per group, but group "
          + cfg.getGroup() + " has " + cfg.getComponentsList());
    }
    component = cfg.getComponents(0);
    App app = Apps.lookup(cfg.getApp());
    app.configure(cfg.getConfigJson());
    if (!app.components().contains(component)) {
      throw new IllegalArgumentException("app " + app.name() + " has no component \"" + component + "\"");
    }
    String tr = cfg.getTransport();
    if (!Endpoints.TRANSPORTS.contains(tr)) {
      throw new IllegalArgumentException("transport \"" + tr
          + "\" is not spoken by the Java host (grpc, http; netrpc is Go-only, inproc cannot leave a process)");
    }
    String policy = cfg.getTransportOptions().getBalancer();
    PeerSet.checkPolicy(policy);
    try {
      Map<String, Caller> deps = new HashMap<>();
      for (String d : app.deps(component)) {
        EndpointSet set = cfg.getPeersMap().get(d);
        if (set == null) {
          throw new IllegalArgumentException("component " + component + ": no endpoints for component " + d
              + ", which is outside group " + cfg.getGroup());
        }
        PeerSet p;
        try {
          p = new PeerSet(d, set, policy, probes, timers);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException("component " + component + ": peer " + d + ": " + e.getMessage(), e);
        }
        peers.put(d, p);
        deps.put(d, p);
      }
      for (String p : cfg.getPeersMap().keySet()) {
        if (!peers.containsKey(p)) {
          throw new IllegalArgumentException("peer " + p + " is not called by component " + component);
        }
      }
      if (System.getenv("SVCLAB_FAIL_COMPONENT") != null && System.getenv("SVCLAB_FAIL_COMPONENT").equals(component)) {
        throw new IllegalArgumentException("component " + component + ": failing at start because SVCLAB_FAIL_COMPONENT="
            + component + " (a test knob)");
      }
      startMetrics();
      boolean propagate = "1".equals(System.getenv(Calls.PROPAGATE_ENV));
      Service svc = app.build(component, deps).intercept((method, call) -> admit(method, call, propagate));
      List<Service> services = List.of(svc, health.service());

      List<WebApp.Listen> httpListens = new ArrayList<>();
      List<String> httpWhat = new ArrayList<>();
      for (Map.Entry<String, Listener> e : new TreeMap<>(cfg.getListenersMap()).entrySet()) {
        if (!e.getKey().equals(component)) {
          throw new IllegalArgumentException("listener for component " + e.getKey() + ", which is not in group "
              + cfg.getGroup());
        }
        listen(e.getValue(), component, services, httpListens, httpWhat);
      }
      if (cfg.hasGateway()) {
        if (!cfg.getEntry().equals(component)) {
          throw new IllegalArgumentException("gateway for entry " + cfg.getEntry() + ", which is not in group "
              + cfg.getGroup());
        }
        if (!"http".equals(cfg.getGateway().getEndpoint().getTransport())) {
          throw new IllegalArgumentException("gateway: transport must be http, got \""
              + cfg.getGateway().getEndpoint().getTransport() + "\"");
        }
        listen(cfg.getGateway(), "gateway", services, httpListens, httpWhat);
      }
      if (!httpListens.isEmpty()) {
        web = WebApp.start(new HttpDispatch(services, timers), httpListens);
        List<String> served = WebApp.served(web);
        for (int i = 0; i < served.size(); i++) {
          where.add(httpWhat.get(i) + " on " + served.get(i));
        }
      }
      if (cfg.hasControl()) {
        Listener l = cfg.getControl();
        checkListener(l, "control");
        if (!"grpc".equals(l.getEndpoint().getTransport())) {
          throw new IllegalArgumentException("control: transport must be grpc, got \"" + l.getEndpoint().getTransport() + "\"");
        }
        control = new GrpcServing(l.getEndpoint(), List.of(controlService()));
        where.add("control on " + control.where());
      }
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /** Serves mesh.metrics; refuses the mesh features this host does not have rather than ignore them. */
  private void startMetrics() throws IOException {
    if (!cfg.hasMesh()) {
      return;
    }
    Mesh m = cfg.getMesh();
    if (m.hasTls() || m.hasTracing() || m.hasResilience()) {
      throw new IllegalArgumentException("mesh: the Java host serves metrics alone of the mesh features, but the config"
          + " asks for " + (m.hasTls() ? "tls" : m.hasTracing() ? "tracing" : "resilience"));
    }
    if (m.hasMetrics()) {
      metrics = new Metrics(cfg.getGroup(), m.getMetrics());
      where.add("metrics on " + metrics.where());
    }
  }

  private void listen(Listener l, String what, List<Service> services, List<WebApp.Listen> httpListens,
      List<String> httpWhat) throws IOException {
    checkListener(l, what);
    if ("grpc".equals(l.getEndpoint().getTransport())) {
      GrpcServing g = new GrpcServing(l.getEndpoint(), services);
      grpcServers.add(g);
      where.add(what + " on " + g.where());
    } else {
      httpListens.add(new WebApp.Listen(l.getEndpoint().getNetwork(), l.getEndpoint().getAddr()));
      httpWhat.add(what);
    }
  }

  private static void checkListener(Listener l, String what) {
    try {
      Endpoints.check(l.getEndpoint());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(what + ": " + e.getMessage(), e);
    }
    if (l.getFd() > 2) {
      throw new IllegalArgumentException(what + ": listener fd " + l.getFd() + " for " + Endpoints.string(l.getEndpoint())
          + ": the Java host cannot serve an inherited socket (neither Netty's nor Tomcat's server takes one); give fd 0"
          + " and the address to listen on");
    }
  }

  /** The drain gate and, when asked, metadata propagation, around every call of the component. */
  private Message admit(String method, Supplier<Message> call, boolean propagate) {
    if (!calls.enter()) {
      throw Status.UNAVAILABLE.withDescription("group " + cfg.getGroup() + " is draining").asRuntimeException();
    }
    served.incrementAndGet();
    long start = System.nanoTime();
    Status.Code code = Status.Code.OK;
    try {
      if (propagate) {
        Context ctx = Context.current();
        Context with = ctx.withValue(Calls.OUTGOING, Calls.propagated(Calls.INCOMING.get(ctx)));
        Context prev = with.attach();
        try {
          return call.get();
        } finally {
          with.detach(prev);
        }
      }
      return call.get();
    } catch (RuntimeException e) {
      code = Status.fromThrowable(e).getCode();
      throw e;
    } finally {
      if (metrics != null) {
        metrics.observe(component, method, (System.nanoTime() - start) / 1e9, code);
      }
      calls.leave();
    }
  }

  /** Serves until SIGTERM or SIGINT (stop() from a signal handler) or Control.Stop. */
  public void run() throws InterruptedException {
    Log.printf("%s group %s (%s) of %s, deployment %s; serving %s", READY_MARKER, cfg.getGroup(), component,
        cfg.getApp(), cfg.getDeployment(), where.isEmpty() ? "nothing" : String.join(", ", where));
    done.await();
    if (graceful) {
      for (GrpcServing g : grpcServers) {
        g.stopGracefully(1000);
      }
    }
    close();
    Log.printf("group %s: %s %d calls", cfg.getGroup(), SERVED_MARKER, served.get());
  }

  /** Ends run() at once, as SIGTERM does. */
  public void stop() {
    done.countDown();
  }

  private void drain() {
    if (!calls.closed()) {
      Log.printf("group %s: draining: new calls refused, %d in flight", cfg.getGroup(), calls.count());
    }
    calls.close();
    health.shutdown();
  }

  private void awaitIdle() {
    Deadline dl = Context.current().getDeadline();
    long ms = dl == null ? Long.MAX_VALUE / 2 : dl.timeRemaining(TimeUnit.MILLISECONDS);
    try {
      if (!calls.awaitIdle(ms)) {
        throw Status.DEADLINE_EXCEEDED.withDescription("drain: " + calls.count() + " call(s) still in flight")
            .asRuntimeException();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.asRuntimeException();
    }
  }

  private Service controlService() {
    return new Service(ControlGrpc.getServiceDescriptor())
        .add(ControlGrpc.getUpdatePeersMethod(), this::updatePeers)
        .add(ControlGrpc.getDrainMethod(), req -> {
          drain();
          awaitIdle();
          return DrainResponse.getDefaultInstance();
        })
        .add(ControlGrpc.getStopMethod(), req -> {
          drain();
          try {
            awaitIdle();
          } catch (io.grpc.StatusRuntimeException e) {
            // the deadline ended first: stop all the same
          }
          graceful = true;
          // Answer first; run() then stops gracefully, so the answer reaches the wire.
          timers.schedule(this::stop, 50, TimeUnit.MILLISECONDS);
          return StopResponse.getDefaultInstance();
        });
  }

  private synchronized UpdatePeersResponse updatePeers(UpdatePeersRequest req) {
    for (Map.Entry<String, EndpointSet> e : req.getPeersMap().entrySet()) {
      if (!peers.containsKey(e.getKey())) {
        throw Status.INVALID_ARGUMENT.withDescription("group " + cfg.getGroup() + " does not call " + e.getKey())
            .asRuntimeException();
      }
      try {
        PeerSet.check(e.getValue());
      } catch (IllegalArgumentException ex) {
        throw Status.INVALID_ARGUMENT.withDescription("peer " + e.getKey() + ": " + ex.getMessage()).asRuntimeException();
      }
    }
    for (Map.Entry<String, EndpointSet> e : req.getPeersMap().entrySet()) {
      peers.get(e.getKey()).update(e.getValue());
    }
    return UpdatePeersResponse.getDefaultInstance();
  }

  private void close() {
    for (GrpcServing g : grpcServers) {
      g.close();
    }
    if (web != null) {
      web.close();
    }
    for (PeerSet p : peers.values()) {
      p.close();
    }
    if (control != null) {
      control.close();
    }
    if (metrics != null) {
      metrics.close();
    }
    probes.shutdownNow();
    timers.shutdownNow();
  }
}
