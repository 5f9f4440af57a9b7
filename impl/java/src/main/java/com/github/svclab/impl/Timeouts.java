package com.github.svclab.impl;

/**
 * The grpc-timeout header's format, which the http transport's Grpc-Timeout
 * header shares: at most eight digits and a unit, n u m S M H. Encoding
 * rounds up, as grpc-go's does, so a server never gets less time than the
 * caller has left.
 */
public final class Timeouts {
  private Timeouts() {}

  private static final long MAX_DIGITS = 99_999_999L;
  private static final long[] UNIT_NANOS = {
    1L, 1_000L, 1_000_000L, 1_000_000_000L, 60_000_000_000L, 3_600_000_000_000L
  };
  private static final char[] UNITS = {'n', 'u', 'm', 'S', 'M', 'H'};

  /** Encodes a remaining time; zero or less is "0n". */
  public static String encode(long nanos) {
    if (nanos <= 0) {
      return "0n";
    }
    for (int i = 0; i < UNITS.length; i++) {
      long n = (nanos + UNIT_NANOS[i] - 1) / UNIT_NANOS[i];
      if (n <= MAX_DIGITS) {
        return n + String.valueOf(UNITS[i]);
      }
    }
    return MAX_DIGITS + "H";
  }

  /** Decodes a header value into nanoseconds, saturating at Long.MAX_VALUE. */
  public static long decode(String s) {
    if (s.length() < 2 || s.length() > 9) {
      throw new IllegalArgumentException("timeout \"" + s + "\": bad length");
    }
    long n;
    try {
      n = Long.parseLong(s.substring(0, s.length() - 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("timeout \"" + s + "\": bad number");
    }
    if (n < 0 || s.charAt(0) == '+') {
      throw new IllegalArgumentException("timeout \"" + s + "\": bad number");
    }
    char u = s.charAt(s.length() - 1);
    for (int i = 0; i < UNITS.length; i++) {
      if (UNITS[i] == u) {
        return n > Long.MAX_VALUE / UNIT_NANOS[i] ? Long.MAX_VALUE : n * UNIT_NANOS[i];
      }
    }
    throw new IllegalArgumentException("timeout \"" + s + "\": bad unit");
  }
}
