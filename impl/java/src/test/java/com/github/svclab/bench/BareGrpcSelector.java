package com.github.svclab.bench;

import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.util.concurrent.ThreadLocalRandom;
import svclab.selector.SelectorGrpc;
import svclab.selector.SelectorOuterClass.SelectRequest;
import svclab.selector.SelectorOuterClass.SelectResponse;

/**
 * The select app's selector as a bare grpc-java server: the generated base
 * class, Netty's defaults and nothing of svclab's host (no deadline
 * bookkeeping, health service, metadata or in-flight tracking). It is the
 * baseline scripts/bench/languages.sh measures the Java host's gRPC
 * serving against (docs/LANGUAGES.md, "Overhead against the bare
 * framework"); a test source, never part of the product.
 *
 * <pre>java -cp target/test-classes:target/classes:target/lib/* com.github.svclab.bench.BareGrpcSelector 127.0.0.1:9000</pre>
 */
public final class BareGrpcSelector extends SelectorGrpc.SelectorImplBase {
  @Override
  public void select(SelectRequest in, StreamObserver<SelectResponse> out) {
    int n = in.getValuesCount();
    if (n == 0) {
      out.onError(Status.INVALID_ARGUMENT.withDescription("values is empty").asRuntimeException());
      return;
    }
    SelectResponse.Builder b = SelectResponse.newBuilder();
    ThreadLocalRandom r = ThreadLocalRandom.current();
    for (int i = 0; i < 3; i++) {
      int p = r.nextInt(n);
      b.addPositions(p).addValues(in.getValues(p));
    }
    out.onNext(b.build());
    out.onCompleted();
  }

  public static void main(String[] args) throws Exception {
    InetSocketAddress addr = BareRestSelector.address(args);
    Server s = NettyServerBuilder.forAddress(addr).addService(new BareGrpcSelector()).build().start();
    System.err.println("bare grpc-java selector listening on " + addr);
    Runtime.getRuntime().addShutdownHook(new Thread(s::shutdownNow));
    s.awaitTermination();
  }
}
