package com.github.svclab.impl.web;

import com.github.svclab.impl.HttpDispatch;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.catalina.connector.Connector;
import org.springframework.boot.Banner;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

/**
 * A Spring Boot application on Tomcat serving {@link RpcController} on
 * every http listener of a host: the first as Spring's own server port,
 * the others as additional Tomcat connectors. A unix-socket listener is a
 * connector with Tomcat's unixDomainSocketPath.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(RpcController.class)
public class WebApp {
  /** One listener: a tcp host:port (port 0 lets the kernel pick) or a unix socket path. */
  public record Listen(String network, String addr) {}

  private static List<Listen> listens = List.of();

  /** Starts the application; stop it with close(). */
  public static synchronized ConfigurableApplicationContext start(HttpDispatch dispatch, List<Listen> ls) {
    listens = List.copyOf(ls);
    return new SpringApplicationBuilder(WebApp.class)
        .web(WebApplicationType.SERVLET)
        .bannerMode(Banner.Mode.OFF)
        .logStartupInfo(false)
        .properties(Map.of(
            "logging.level.root", "WARN",
            "spring.main.register-shutdown-hook", "false",
            "server.shutdown", "immediate",
            "spring.mvc.problemdetails.enabled", "false"))
        .initializers(ctx -> ctx.getBeanFactory().registerSingleton("httpDispatch", dispatch))
        .run();
  }

  /** The addresses served, in the order given, as transport+network://addr. */
  public static List<String> served(ConfigurableApplicationContext ctx) {
    TomcatWebServer ws = (TomcatWebServer) ((ServletWebServerApplicationContext) ctx).getWebServer();
    List<String> out = new ArrayList<>();
    Connector[] cs = ws.getTomcat().getService().findConnectors();
    for (int i = 0; i < cs.length && i < listens.size(); i++) {
      Listen l = listens.get(i);
      if ("unix".equals(l.network())) {
        out.add("http+unix://" + l.addr());
      } else {
        String host = l.addr().substring(0, l.addr().lastIndexOf(':'));
        out.add("http+tcp://" + host + ":" + cs[i].getLocalPort());
      }
    }
    return out;
  }

  @Bean
  WebServerFactoryCustomizer<TomcatServletWebServerFactory> listeners() {
    return f -> {
      for (int i = 0; i < listens.size(); i++) {
        Listen l = listens.get(i);
        if (i == 0) {
          if ("unix".equals(l.network())) {
            f.setPort(0);
            f.addConnectorCustomizers(c -> c.setProperty("unixDomainSocketPath", l.addr()));
          } else {
            InetSocketAddress a = inet(l.addr());
            f.setPort(a.getPort());
            f.setAddress(a.getAddress());
          }
          continue;
        }
        Connector c = new Connector(TomcatServletWebServerFactory.DEFAULT_PROTOCOL);
        if ("unix".equals(l.network())) {
          c.setProperty("unixDomainSocketPath", l.addr());
        } else {
          InetSocketAddress a = inet(l.addr());
          c.setPort(a.getPort());
          c.setProperty("address", a.getAddress().getHostAddress());
        }
        f.addAdditionalTomcatConnectors(c);
      }
    };
  }

  private static InetSocketAddress inet(String hostPort) {
    int i = hostPort.lastIndexOf(':');
    String host = hostPort.substring(0, i).replace("[", "").replace("]", "");
    try {
      return new InetSocketAddress(InetAddress.getByName(host.isEmpty() ? "0.0.0.0" : host),
          Integer.parseInt(hostPort.substring(i + 1)));
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("address \"" + hostPort + "\": " + e.getMessage());
    }
  }
}
