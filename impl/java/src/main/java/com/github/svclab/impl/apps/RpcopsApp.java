package com.github.svclab.impl.apps;

import com.github.svclab.impl.Caller;
import com.github.svclab.impl.Calls;
import com.github.svclab.impl.Service;
import java.util.List;
import java.util.Map;
import java.util.Set;
import svclab.rpcops.FrontendGrpc;
import svclab.rpcops.OpsGrpc;
import svclab.rpcops.Rpcops.EightLongsRequest;
import svclab.rpcops.Rpcops.LongRequest;
import svclab.rpcops.Rpcops.LongResponse;
import svclab.rpcops.Rpcops.MovieRequest;
import svclab.rpcops.Rpcops.MovieResponse;
import svclab.rpcops.Rpcops.StringRequest;
import svclab.rpcops.Rpcops.StringResponse;
import svclab.rpcops.Rpcops.VoidRequest;
import svclab.rpcops.Rpcops.VoidResponse;

/**
 * The rpcops app (S4), as apps/rpcops: "frontend" forwards every operation
 * to "ops": Void, Long (value + 1), EightLongs (their sum), String (the same
 * string) and Movie (the movie with sent = true). Arithmetic wraps around
 * as Go's int64 does.
 */
public final class RpcopsApp implements App {
  public static final String NAME = "rpcops";
  public static final String FRONTEND = "frontend";
  public static final String OPS = "ops";
  static final List<String> OPERATIONS = List.of("void", "long", "eightlongs", "string", "movie");

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public List<String> components() {
    return List.of(FRONTEND, OPS);
  }

  @Override
  public List<String> deps(String component) {
    return FRONTEND.equals(component) ? List.of(OPS) : List.of();
  }

  @Override
  public void configure(String configJson) {
    StrictJson j = new StrictJson(NAME, configJson, Set.of("op", "string_len"));
    String op = j.string("op", "all");
    long len = j.integer("string_len", 16);
    if (!"all".equals(op) && !OPERATIONS.contains(op)) {
      throw new ConfigException("op", "must be one of " + String.join(", ", OPERATIONS)
          + " or \"all\", got \"" + op + "\"");
    }
    if (len < 2 || len > 1024) {
      throw new ConfigException("string_len", "must be between 2 and 1024, got " + len);
    }
  }

  @Override
  public Service build(String component, Map<String, Caller> peers) {
    switch (component) {
      case FRONTEND:
        Caller n = peers.get(OPS);
        return new Service(FrontendGrpc.getServiceDescriptor())
            .add(FrontendGrpc.getVoidMethod(), req -> n.call(OpsGrpc.getVoidMethod(), req))
            .add(FrontendGrpc.getLongMethod(), req -> n.call(OpsGrpc.getLongMethod(), req))
            .add(FrontendGrpc.getEightLongsMethod(), req -> n.call(OpsGrpc.getEightLongsMethod(), req))
            .add(FrontendGrpc.getStringMethod(), req -> n.call(OpsGrpc.getStringMethod(), req))
            .add(FrontendGrpc.getMovieMethod(), req -> n.call(OpsGrpc.getMovieMethod(), req));
      case OPS:
        return new Service(OpsGrpc.getServiceDescriptor())
            .add(OpsGrpc.getVoidMethod(), RpcopsApp::voidOp)
            .add(OpsGrpc.getLongMethod(), RpcopsApp::longOp)
            .add(OpsGrpc.getEightLongsMethod(), RpcopsApp::eightLongs)
            .add(OpsGrpc.getStringMethod(), RpcopsApp::string)
            .add(OpsGrpc.getMovieMethod(), RpcopsApp::movie);
      default:
        throw new ConfigException("app " + NAME + " has no component \"" + component + "\"");
    }
  }

  static VoidResponse voidOp(VoidRequest in) {
    Calls.sleep(OPS, in.getSleepMicros());
    return VoidResponse.getDefaultInstance();
  }

  static LongResponse longOp(LongRequest in) {
    Calls.sleep(OPS, in.getSleepMicros());
    return LongResponse.newBuilder().setValue(in.getValue() + 1).build();
  }

  static LongResponse eightLongs(EightLongsRequest in) {
    Calls.sleep(OPS, in.getSleepMicros());
    long sum = in.getV1() + in.getV2() + in.getV3() + in.getV4() + in.getV5() + in.getV6() + in.getV7() + in.getV8();
    return LongResponse.newBuilder().setValue(sum).build();
  }

  static StringResponse string(StringRequest in) {
    Calls.sleep(OPS, in.getSleepMicros());
    return StringResponse.newBuilder().setValue(in.getValue()).build();
  }

  static MovieResponse movie(MovieRequest in) {
    Calls.sleep(OPS, in.getSleepMicros());
    return MovieResponse.newBuilder().setMovie(in.getMovie().toBuilder().setSent(true)).build();
  }
}
