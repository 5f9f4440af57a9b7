package com.github.svclab.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.Status;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HttpCodesTest {
  // docs/TRANSPORTS.md, "Status codes", left half.
  @ParameterizedTest
  @CsvSource({
    "OK, 200", "CANCELLED, 499", "UNKNOWN, 500", "INVALID_ARGUMENT, 400", "DEADLINE_EXCEEDED, 504",
    "NOT_FOUND, 404", "ALREADY_EXISTS, 409", "PERMISSION_DENIED, 403", "RESOURCE_EXHAUSTED, 429",
    "FAILED_PRECONDITION, 400", "ABORTED, 409", "OUT_OF_RANGE, 400", "UNIMPLEMENTED, 501",
    "INTERNAL, 500", "UNAVAILABLE, 503", "DATA_LOSS, 500", "UNAUTHENTICATED, 401",
  })
  void httpStatus(Status.Code code, int want) {
    assertEquals(want, HttpCodes.httpStatus(code));
  }

  // Right half: answers without a Grpc-Status.
  @ParameterizedTest
  @CsvSource({
    "200, OK", "400, INVALID_ARGUMENT", "401, UNAUTHENTICATED", "403, PERMISSION_DENIED",
    "404, NOT_FOUND", "409, ABORTED", "429, RESOURCE_EXHAUSTED", "499, CANCELLED", "500, INTERNAL",
    "501, UNIMPLEMENTED", "502, UNAVAILABLE", "503, UNAVAILABLE", "504, DEADLINE_EXCEEDED",
    "418, UNKNOWN", "302, UNKNOWN",
  })
  void code(int status, Status.Code want) {
    assertEquals(want, HttpCodes.code(status));
  }

  @Test
  void queryEscapeAsGo() {
    // What Go's url.QueryEscape writes for the same text.
    assertEquals("http%3A+%2Fsvclab.rpcops.Frontend%2FVoid+takes+POST%2C+not+GET",
        HttpCodes.queryEscape("http: /svclab.rpcops.Frontend/Void takes POST, not GET"));
    assertEquals("a-b_c.d~e%2Af%27%28%29%21", HttpCodes.queryEscape("a-b_c.d~e*f'()!"));
    assertEquals("%C3%BC%E2%80%94%F0%9F%99%82", HttpCodes.queryEscape("ü—🙂"));
    assertEquals("%25%2B%26%3D%3F", HttpCodes.queryEscape("%+&=?"));
  }

  @Test
  void queryUnescapeUndoesIt() {
    String s = "recorder: ünïcödé — 🙂 spaces/slashes?&=%+ and 'quotes'";
    assertEquals(s, HttpCodes.queryUnescape(HttpCodes.queryEscape(s)));
    assertEquals("100% sure", HttpCodes.queryUnescape("100%25+sure"));
    assertEquals("bad %zz escape%", HttpCodes.queryUnescape("bad+%zz+escape%"));
  }
}
