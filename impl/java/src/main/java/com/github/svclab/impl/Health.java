package com.github.svclab.impl;

import io.grpc.Status;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;

/**
 * The standard health service, unary Check only (as the Go host registers
 * it): the empty service name is SERVING until the host drains, then
 * NOT_SERVING; any other name is NOT_FOUND, as grpc-go's health server
 * answers.
 */
final class Health {
  private volatile boolean serving = true;

  void shutdown() {
    serving = false;
  }

  Service service() {
    return new Service(HealthGrpc.getServiceDescriptor()).add(HealthGrpc.getCheckMethod(), this::check);
  }

  private HealthCheckResponse check(HealthCheckRequest req) {
    if (!req.getService().isEmpty()) {
      throw Status.NOT_FOUND.withDescription("unknown service").asRuntimeException();
    }
    return HealthCheckResponse.newBuilder()
        .setStatus(serving ? HealthCheckResponse.ServingStatus.SERVING : HealthCheckResponse.ServingStatus.NOT_SERVING)
        .build();
  }
}
