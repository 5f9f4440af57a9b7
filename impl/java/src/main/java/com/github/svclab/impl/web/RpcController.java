package com.github.svclab.impl.web;

import com.github.svclab.impl.HttpDispatch;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.util.AbstractMap;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The Spring MVC controller of the http transport: every path and method
 * reaches {@link HttpDispatch}, which knows the routes (POST
 * /pkg.Service/Method) and answers 404 or 405 itself, as the Go server does.
 */
@RestController
public class RpcController {
  private final HttpDispatch dispatch;

  public RpcController(HttpDispatch dispatch) {
    this.dispatch = dispatch;
  }

  @RequestMapping("/**")
  public ResponseEntity<byte[]> call(HttpServletRequest req) throws IOException {
    byte[] body = req.getInputStream().readAllBytes();
    HttpDispatch.Answer a = dispatch.handle(req.getMethod(), req.getRequestURI(), new ServletHeaders(req), body);
    HttpHeaders h = new HttpHeaders();
    a.headers().forEach(h::set);
    return ResponseEntity.status(a.status()).headers(h).body(a.body());
  }

  private record ServletHeaders(HttpServletRequest req) implements HttpDispatch.Headers {
    @Override
    public String first(String name) {
      return req.getHeader(name);
    }

    @Override
    public Iterable<Map.Entry<String, List<String>>> all() {
      return () -> new Iterator<>() {
        private final java.util.Enumeration<String> names = req.getHeaderNames();

        @Override
        public boolean hasNext() {
          return names.hasMoreElements();
        }

        @Override
        public Map.Entry<String, List<String>> next() {
          String n = names.nextElement();
          return new AbstractMap.SimpleImmutableEntry<>(n, Collections.list(req.getHeaders(n)));
        }
      };
    }
  }
}
