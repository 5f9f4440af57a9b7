package com.github.svclab.impl;

import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

/** Log lines on stderr, dated as Go's log package dates them. */
public final class Log {
  private Log() {}

  private static final DateTimeFormatter DATE = DateTimeFormatter.ofPattern("yyyy/MM/dd HH:mm:ss ");

  public static void printf(String format, Object... args) {
    String line = LocalDateTime.now().format(DATE) + String.format(format, args);
    synchronized (System.err) {
      System.err.println(line);
      System.err.flush();
    }
  }

  /** A duration as Go prints a time.Duration rounded to the microsecond: 1.5s, 200.1ms, 45µs. */
  public static String duration(long nanos) {
    long us = Math.round(nanos / 1000.0);
    if (us == 0) {
      return "0s";
    }
    String sign = us < 0 ? "-" : "";
    us = Math.abs(us);
    if (us < 1000) {
      return sign + us + "µs";
    }
    if (us < 1_000_000) {
      return sign + trim(us / 1000.0) + "ms";
    }
    return sign + trim(us / 1_000_000.0) + "s";
  }

  private static String trim(double v) {
    String s = String.format("%.6f", v);
    s = s.replaceAll("0+$", "");
    return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
  }
}
