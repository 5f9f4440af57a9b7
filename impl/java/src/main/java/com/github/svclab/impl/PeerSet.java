package com.github.svclab.impl;

import com.google.protobuf.Message;
import io.grpc.Context;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import svclab.host.v1.Host;

/**
 * The endpoint set of one peer component and the balancer over it, as the
 * Go host's internal/runtime/balancer does it (docs/DEPLOY.md, "Replicas,
 * load balancing and autoscaling"): round robin from a random start, or
 * least outstanding (fewest of this host's calls in flight, ties to the
 * endpoint picked least often). A call that fails UNAVAILABLE takes its
 * endpoint out of the choice until the endpoint's health service answers
 * SERVING, asked with a backoff from 20 ms to 1 s; while every endpoint is
 * out, calls go to them in turn rather than fail outright. The deployer may
 * replace the set while calls run (Control.UpdatePeers); an endpoint dropped
 * from it is closed. An empty set fails calls with UNAVAILABLE.
 */
final class PeerSet implements Caller {
  static final String ROUND_ROBIN = "round_robin";
  static final String LEAST_OUTSTANDING = "least_outstanding";
  static final long PROBE_MIN_MILLIS = 20;
  static final long PROBE_MAX_MILLIS = 1000;
  static final long PROBE_TIMEOUT_MILLIS = 1000;

  private final String component;
  private final boolean leastOutstanding;
  private final ScheduledExecutorService probes;
  private final ScheduledExecutorService deadlines;
  private volatile Picker picker = new Picker(List.of());
  private Map<String, Sub> byAddr = new LinkedHashMap<>();

  /**
   * The set of component, balanced by policy (empty is round robin);
   * probes runs the health probes, deadlines ends them (a probe blocks, so
   * the two are apart).
   */
  PeerSet(String component, Host.EndpointSet set, String policy, ScheduledExecutorService probes,
      ScheduledExecutorService deadlines) {
    checkPolicy(policy);
    this.component = component;
    this.leastOutstanding = LEAST_OUTSTANDING.equals(policy);
    this.probes = probes;
    this.deadlines = deadlines;
    update(set);
  }

  /** Fails, naming the known ones, on a balancer the host does not have. */
  static void checkPolicy(String policy) {
    if (!policy.isEmpty() && !ROUND_ROBIN.equals(policy) && !LEAST_OUTSTANDING.equals(policy)) {
      throw new IllegalArgumentException("transport_options.balancer: unknown balancer \"" + policy
          + "\" (known: " + LEAST_OUTSTANDING + ", " + ROUND_ROBIN + ")");
    }
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

  /** Replaces the set; endpoints kept keep their connections and health. */
  synchronized void update(Host.EndpointSet set) {
    check(set);
    Map<String, Sub> now = new LinkedHashMap<>();
    for (Host.Endpoint e : set.getEndpointsList()) {
      String k = Endpoints.string(e);
      Sub s = byAddr.remove(k);
      now.put(k, s != null ? s : new Sub(Endpoints.dial(e)));
    }
    // Publish before retiring, so no new call picks a retired endpoint.
    picker = new Picker(List.copyOf(now.values()));
    for (Sub gone : byAddr.values()) {
      gone.retire();
    }
    byAddr = now;
  }

  @Override
  public <Q extends Message, R extends Message> R call(MethodDescriptor<Q, R> method, Q request) {
    Picker p = picker;
    if (p.subs.isEmpty()) {
      throw Status.UNAVAILABLE.withDescription("no endpoints for component " + component).asRuntimeException();
    }
    Sub s = leastOutstanding ? p.leastOutstanding() : p.roundRobin();
    s.outstanding.incrementAndGet();
    try {
      return s.caller.call(method, request);
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.UNAVAILABLE) {
        s.eject();
      }
      throw e;
    } finally {
      s.outstanding.decrementAndGet();
    }
  }

  @Override
  public synchronized void close() {
    for (Sub s : byAddr.values()) {
      s.retire();
    }
    byAddr = new LinkedHashMap<>();
    picker = new Picker(List.of());
  }

  /** One published set: what calls pick from, with where round robin is. */
  private static final class Picker {
    final List<Sub> subs;
    final AtomicLong next;

    Picker(List<Sub> subs) {
      this.subs = subs;
      // A random start, as grpc-go's round_robin: replicas of one caller
      // started together do not all send their first call to one endpoint.
      this.next = new AtomicLong(subs.isEmpty() ? 0 : ThreadLocalRandom.current().nextInt(subs.size()));
    }

    Sub roundRobin() {
      int n = subs.size();
      long i = next.getAndIncrement();
      for (int k = 0; k < n; k++) {
        Sub s = subs.get((int) Math.floorMod(i + k, (long) n));
        if (!s.sick) {
          if (k > 0) {
            // The next call starts after this one, so a sick endpoint's
            // turn is not always its neighbour's.
            next.compareAndSet(i + 1, i + k + 1);
          }
          return s;
        }
      }
      return subs.get((int) Math.floorMod(i, (long) n));
    }

    Sub leastOutstanding() {
      int n = subs.size();
      int start = (int) Math.floorMod(next.getAndIncrement(), (long) n);
      Sub best = null;
      int bestCalls = 0;
      long bestPicks = 0;
      for (int k = 0; k < n; k++) {
        Sub s = subs.get((start + k) % n);
        if (s.sick) {
          continue;
        }
        int c = s.outstanding.get();
        long picks = s.picks.get();
        if (best == null || c < bestCalls || (c == bestCalls && picks < bestPicks)) {
          best = s;
          bestCalls = c;
          bestPicks = picks;
        }
      }
      if (best == null) {
        best = subs.get(start); // every endpoint is sick: try them in turn
      }
      best.picks.incrementAndGet();
      return best;
    }
  }

  /** One endpoint: its client, calls in flight, picks and health. */
  private final class Sub {
    final Caller caller;
    final AtomicInteger outstanding = new AtomicInteger();
    final AtomicLong picks = new AtomicLong();
    volatile boolean sick;
    volatile boolean retired;

    Sub(Caller caller) {
      this.caller = caller;
    }

    /** Takes the endpoint out of the choice and starts its probe, once. */
    synchronized void eject() {
      if (sick || retired) {
        return;
      }
      sick = true;
      probeAfter(PROBE_MIN_MILLIS);
    }

    private void probeAfter(long millis) {
      try {
        probes.schedule(() -> probe(millis), millis, TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        // the host is stopping
      }
    }

    private void probe(long waited) {
      if (retired) {
        return;
      }
      if (serving()) {
        sick = false;
        return;
      }
      probeAfter(Math.min(2 * waited, PROBE_MAX_MILLIS));
    }

    private boolean serving() {
      Context.CancellableContext ctx = Context.ROOT.withDeadlineAfter(PROBE_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS, deadlines);
      try {
        HealthCheckResponse r = ctx.call(() -> caller.call(HealthGrpc.getCheckMethod(), HealthCheckRequest.getDefaultInstance()));
        return r.getStatus() == HealthCheckResponse.ServingStatus.SERVING;
      } catch (Exception e) {
        return false;
      } finally {
        ctx.cancel(null);
      }
    }

    synchronized void retire() {
      retired = true;
      caller.close();
    }
  }
}
