package com.github.svclab.impl;

import io.grpc.Status;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.instrumentation.jvm.ProcessMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.Labels;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import svclab.host.v1.Host;

/**
 * deploy.metrics in the Java host: the Go host's RED metrics
 * (internal/runtime/middleware/metrics), with the same names, labels and
 * buckets, so that metrics.parquet and the report treat a Java component
 * as a Go one. Served on {@code HostConfig.mesh.metrics.listener} by the
 * Prometheus Java client's own HTTP server, beside the process's CPU and
 * resident memory ({@code process_cpu_seconds_total},
 * {@code process_resident_memory_bytes}).
 */
public final class Metrics implements AutoCloseable {
  // The client adds _total to a counter's name.
  static final String REQUESTS = "svclab_requests";
  static final String ERRORS = "svclab_request_errors";
  static final String DURATION = "svclab_request_duration_seconds";

  /** grpc-go's names of the codes (codes.Code.String()), which label errors on every host. */
  private static final Map<Status.Code, String> GO_CODES = new EnumMap<>(Status.Code.class);

  static {
    String[] names = {"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
        "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
        "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"};
    for (Status.Code c : Status.Code.values()) {
      GO_CODES.put(c, names[c.value()]);
    }
  }

  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final Counter requests;
  private final Counter errors;
  private final Histogram duration;
  private final HTTPServer server;
  private final InetSocketAddress at;

  /**
   * Serves the metrics of the host running group on the address of cfg's
   * listener (a tcp host:port; port 0 picks one).
   */
  Metrics(String group, Host.Metrics cfg) throws IOException {
    Labels constLabels = Labels.of("group", group);
    requests = Counter.builder().name(REQUESTS).help("Calls served, by component and method.")
        .constLabels(constLabels).labelNames("component", "method").register(registry);
    errors = Counter.builder().name(ERRORS)
        .help("Calls served that failed, by component, method and gRPC status code.")
        .constLabels(constLabels).labelNames("component", "method", "code").register(registry);
    duration = Histogram.builder().name(DURATION).help("Time to serve a call, by component and method.")
        .constLabels(constLabels).labelNames("component", "method")
        .classicOnly().classicUpperBounds(buckets(cfg.getBucketsList())).withoutExemplars()
        .register(registry);
    ProcessMetrics.builder().register(registry);
    Host.Endpoint ep = cfg.getListener().getEndpoint();
    if (!"tcp".equals(ep.getNetwork())) {
      throw new IllegalArgumentException("mesh.metrics: listener " + Endpoints.string(ep)
          + ": the metrics server listens on tcp only");
    }
    if (cfg.getListener().getFd() > 2) {
      throw new IllegalArgumentException("mesh.metrics: listener fd " + cfg.getListener().getFd()
          + ": the Java host cannot serve an inherited socket; give fd 0 and the address to listen on");
    }
    // One exposition now loads the client's classes, which the first
    // scrape would otherwise do within Prometheus's scrape timeout (0.9 s),
    // too short for a JVM on a loaded machine.
    registry.scrape();
    at = Addresses.inet(ep.getAddr());
    server = HTTPServer.builder().inetAddress(at.getAddress()).port(at.getPort()).registry(registry)
        .buildAndStart();
  }

  /**
   * The deployer's bounds; without them, the Go host's formula
   * (prometheus.ExponentialBucketsRange(50e-6, 10, 20)), whose last digits
   * may differ from Go's math.Pow.
   */
  static double[] buckets(List<Double> given) {
    if (!given.isEmpty()) {
      return given.stream().mapToDouble(Double::doubleValue).toArray();
    }
    double[] out = new double[20];
    double growth = Math.pow(10 / 50e-6, 1.0 / (out.length - 1));
    for (int i = 0; i < out.length; i++) {
      out[i] = 50e-6 * Math.pow(growth, i);
    }
    return out;
  }

  /** Where the metrics are served, host:port. */
  String where() {
    return Addresses.hostPort(new InetSocketAddress(at.getAddress(), server.getPort()));
  }

  /** Counts one call served of component's method (pkg.Service/Method) that took seconds and ended in code. */
  void observe(String component, String method, double seconds, Status.Code code) {
    duration.labelValues(component, method).observe(seconds);
    requests.labelValues(component, method).inc();
    if (code != Status.Code.OK) {
      errors.labelValues(component, method, GO_CODES.get(code)).inc();
    }
  }

  @Override
  public void close() {
    server.close();
  }
}
