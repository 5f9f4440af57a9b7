package com.github.svclab.impl.apps;

import com.github.svclab.impl.Caller;
import com.github.svclab.impl.Calls;
import com.github.svclab.impl.Service;
import io.grpc.Status;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import svclab.selector.FrontendGrpc;
import svclab.selector.SelectorGrpc;
import svclab.selector.SelectorOuterClass.SelectRequest;
import svclab.selector.SelectorOuterClass.SelectResponse;

/**
 * The select app (S3), as apps/select: "frontend" forwards Select to
 * "selector", which returns three elements of the array at random positions.
 */
public final class SelectApp implements App {
  public static final String NAME = "select";
  public static final String FRONTEND = "frontend";
  public static final String SELECTOR = "selector";
  public static final int PICKS = 3;

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public List<String> components() {
    return List.of(FRONTEND, SELECTOR);
  }

  @Override
  public List<String> deps(String component) {
    return FRONTEND.equals(component) ? List.of(SELECTOR) : List.of();
  }

  @Override
  public void configure(String configJson) {
    StrictJson j = new StrictJson(NAME, configJson, Set.of("size", "seed"));
    String size = j.string("size", "std");
    j.integer("seed", 1);
    if (!"std".equals(size) && !"large".equals(size)) {
      throw new ConfigException("size", "must be \"std\" or \"large\", got \"" + size + "\"");
    }
  }

  @Override
  public Service build(String component, Map<String, Caller> peers) {
    switch (component) {
      case FRONTEND:
        Caller next = peers.get(SELECTOR);
        return new Service(FrontendGrpc.getServiceDescriptor())
            .add(FrontendGrpc.getSelectMethod(), req -> next.call(SelectorGrpc.getSelectMethod(), req));
      case SELECTOR:
        return new Service(SelectorGrpc.getServiceDescriptor())
            .add(SelectorGrpc.getSelectMethod(), SelectApp::select);
      default:
        throw new ConfigException("app " + NAME + " has no component \"" + component + "\"");
    }
  }

  static SelectResponse select(SelectRequest in) {
    Calls.sleep(SELECTOR, in.getSleepMicros());
    int n = in.getValuesCount();
    if (n == 0) {
      throw Status.INVALID_ARGUMENT.withDescription("selector: values is empty").asRuntimeException();
    }
    SelectResponse.Builder b = SelectResponse.newBuilder();
    ThreadLocalRandom r = ThreadLocalRandom.current();
    for (int i = 0; i < PICKS; i++) {
      int p = r.nextInt(n);
      b.addPositions(p).addValues(in.getValues(p));
    }
    return b.build();
  }
}
