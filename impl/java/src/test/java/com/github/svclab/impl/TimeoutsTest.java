package com.github.svclab.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class TimeoutsTest {
  // Go's dispatch.EncodeTimeout gives the same: the smallest unit whose
  // count fits in eight digits, rounded up.
  @ParameterizedTest
  @CsvSource({
    "0, 0n",
    "-5, 0n",
    "1, 1n",
    "99999999, 99999999n",
    "100000000, 100000u",
    "100000001, 100001u",
    "2000000000, 2000000u",
    "3600000000000, 3600000m",
  })
  void encode(long nanos, String want) {
    assertEquals(want, Timeouts.encode(nanos));
  }

  @ParameterizedTest
  @CsvSource({
    "100m, 100000000",
    "2S, 2000000000",
    "500u, 500000",
    "7n, 7",
    "1M, 60000000000",
    "1H, 3600000000000",
    "0n, 0",
  })
  void decode(String header, long nanos) {
    assertEquals(nanos, Timeouts.decode(header));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "m", "1", "1x", "+1m", "-1m", "1.5S", "123456789m", "soon"})
  void decodeRefuses(String header) {
    assertThrows(IllegalArgumentException.class, () -> Timeouts.decode(header));
  }
}
