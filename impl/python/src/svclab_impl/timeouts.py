"""The grpc-timeout format, shared by the http transport's Grpc-Timeout header."""

from __future__ import annotations

import math

_UNITS = (("n", 1e-9), ("u", 1e-6), ("m", 1e-3), ("S", 1.0), ("M", 60.0), ("H", 3600.0))
_NANOS = {"n": 1, "u": 1_000, "m": 1_000_000, "S": 1_000_000_000, "M": 60_000_000_000,
          "H": 3_600_000_000_000}
_MAX_DIGITS = 99_999_999


def encode(seconds: float) -> str:
    """Encodes a remaining time, rounded up as grpc-go rounds; zero or less is "0n"."""
    nanos = math.ceil(seconds * 1e9)
    if nanos <= 0:
        return "0n"
    for unit, _ in _UNITS:
        n = -(-nanos // _NANOS[unit])
        if n <= _MAX_DIGITS:
            return f"{n}{unit}"
    return f"{_MAX_DIGITS}H"


def decode(value: str) -> float:
    """Decodes a header value into seconds; raises ValueError as Go's DecodeTimeout errs."""
    if len(value) < 2 or len(value) > 9:
        raise ValueError(f'timeout "{value}": bad length')
    digits, unit = value[:-1], value[-1]
    if not digits.isdigit() or not digits.isascii():
        raise ValueError(f'timeout "{value}": bad number')
    if unit not in _NANOS:
        raise ValueError(f'timeout "{value}": bad unit')
    return int(digits) * _NANOS[unit] / 1e9
