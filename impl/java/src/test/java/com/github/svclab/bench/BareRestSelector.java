package com.github.svclab.bench;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import svclab.selector.SelectorOuterClass.SelectRequest;
import svclab.selector.SelectorOuterClass.SelectResponse;

/**
 * The select app's selector as a hand-written Spring Boot controller on
 * Tomcat: one {@code @PostMapping} of the route svclab's http transport
 * uses, the body decoded and encoded with the same protobuf JSON mapping
 * (the project's Java classpath has no Jackson), and nothing of svclab's
 * host (generic dispatch, deadline header, metadata, status mapping). It is
 * the baseline scripts/bench/languages.sh measures the Java host's REST
 * serving against; a test source, never part of the product.
 *
 * <pre>java -cp target/test-classes:target/classes:target/lib/* com.github.svclab.bench.BareRestSelector 127.0.0.1:8080</pre>
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@RestController
public class BareRestSelector {
  private static final JsonFormat.Parser PARSER = JsonFormat.parser();
  private static final JsonFormat.Printer PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();

  @PostMapping(path = "/svclab.selector.Selector/Select", produces = MediaType.APPLICATION_JSON_VALUE)
  public ResponseEntity<String> select(@RequestBody String body) throws InvalidProtocolBufferException {
    SelectRequest.Builder in = SelectRequest.newBuilder();
    PARSER.merge(body, in);
    int n = in.getValuesCount();
    if (n == 0) {
      return ResponseEntity.badRequest().body("{\"message\":\"values is empty\"}");
    }
    SelectResponse.Builder b = SelectResponse.newBuilder();
    ThreadLocalRandom r = ThreadLocalRandom.current();
    for (int i = 0; i < 3; i++) {
      int p = r.nextInt(n);
      b.addPositions(p).addValues(in.getValues(p));
    }
    return ResponseEntity.ok(PRINTER.print(b));
  }

  static InetSocketAddress address(String[] args) {
    if (args.length != 1 || !args[0].contains(":")) {
      System.err.println("usage: BareRestSelector|BareGrpcSelector HOST:PORT");
      System.exit(2);
    }
    int i = args[0].lastIndexOf(':');
    return new InetSocketAddress(args[0].substring(0, i), Integer.parseInt(args[0].substring(i + 1)));
  }

  public static void main(String[] args) {
    InetSocketAddress addr = address(args);
    SpringApplication app = new SpringApplication(BareRestSelector.class);
    app.setDefaultProperties(Map.<String, Object>of(
        "server.address", addr.getHostString(),
        "server.port", addr.getPort(),
        "spring.main.banner-mode", "off",
        "logging.level.root", "WARN"));
    app.run();
  }
}
