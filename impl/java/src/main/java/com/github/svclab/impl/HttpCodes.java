package com.github.svclab.impl;

import io.grpc.Status;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * The http transport's status mapping (docs/TRANSPORTS.md, "Status codes"):
 * grpc-gateway's code → HTTP status for answers, and the inverse a client
 * uses for an answer without a gRPC status of its own.
 */
public final class HttpCodes {
  private HttpCodes() {}

  /** The HTTP status a server answers a failed call of this code with. */
  public static int httpStatus(Status.Code c) {
    switch (c) {
      case OK:
        return 200;
      case CANCELLED:
        return 499;
      case INVALID_ARGUMENT:
      case FAILED_PRECONDITION:
      case OUT_OF_RANGE:
        return 400;
      case DEADLINE_EXCEEDED:
        return 504;
      case NOT_FOUND:
        return 404;
      case ALREADY_EXISTS:
      case ABORTED:
        return 409;
      case PERMISSION_DENIED:
        return 403;
      case UNAUTHENTICATED:
        return 401;
      case RESOURCE_EXHAUSTED:
        return 429;
      case UNIMPLEMENTED:
        return 501;
      case UNAVAILABLE:
        return 503;
      default:
        return 500; // UNKNOWN, INTERNAL, DATA_LOSS
    }
  }

  /** The gRPC code of an HTTP answer that carries none. */
  public static Status.Code code(int httpStatus) {
    switch (httpStatus) {
      case 200:
        return Status.Code.OK;
      case 400:
        return Status.Code.INVALID_ARGUMENT;
      case 401:
        return Status.Code.UNAUTHENTICATED;
      case 403:
        return Status.Code.PERMISSION_DENIED;
      case 404:
        return Status.Code.NOT_FOUND;
      case 409:
        return Status.Code.ABORTED;
      case 429:
        return Status.Code.RESOURCE_EXHAUSTED;
      case 499:
        return Status.Code.CANCELLED;
      case 500:
        return Status.Code.INTERNAL;
      case 501:
        return Status.Code.UNIMPLEMENTED;
      case 502:
      case 503:
        return Status.Code.UNAVAILABLE;
      case 504:
        return Status.Code.DEADLINE_EXCEEDED;
      default:
        return Status.Code.UNKNOWN;
    }
  }

  /**
   * Escapes a message for the Grpc-Message header exactly as Go's
   * url.QueryEscape does: unreserved bytes stay, space is '+', the rest %XX.
   */
  public static String queryEscape(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    StringBuilder out = new StringBuilder(b.length);
    for (byte x : b) {
      int c = x & 0xff;
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '-' || c == '_' || c == '.' || c == '~') {
        out.append((char) c);
      } else if (c == ' ') {
        out.append('+');
      } else {
        out.append('%').append(HEX[c >> 4]).append(HEX[c & 15]);
      }
    }
    return out.toString();
  }

  /** Undoes queryEscape (and any query escaping); bad escapes stay as they are. */
  public static String queryUnescape(String s) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
    int i = 0;
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c == '+') {
        out.write(' ');
        i++;
      } else if (c == '%' && i + 2 < s.length()
          && Character.digit(s.charAt(i + 1), 16) >= 0
          && Character.digit(s.charAt(i + 2), 16) >= 0) {
        out.write(Character.digit(s.charAt(i + 1), 16) * 16 + Character.digit(s.charAt(i + 2), 16));
        i += 3;
      } else {
        int cp = s.codePointAt(i);
        byte[] b = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
        out.write(b, 0, b.length);
        i += Character.charCount(cp);
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();
}
