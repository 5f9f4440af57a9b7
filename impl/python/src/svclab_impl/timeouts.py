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


def for_grpcio(seconds: float) -> float:
    """A timeout to hand grpcio so that the deadline it sends never leaves
    more than seconds: grpcio's core rounds a timeout up to its encoding's
    grid (1 ms under 1 s, 10 ms under 10 s, 100 ms under 100 s, and so
    on), and the time left it reports may run a little past the caller's
    under load (its clock is read once per batch of work), so a deadline
    forwarded as it is came out 10.0999 s of a caller's 10 s. One grid
    step is taken off first; under 1 ms nothing is left to take."""
    step = 1e-3 if seconds < 1 else 10.0 ** (math.floor(math.log10(seconds)) - 2)
    return max(seconds - step, 1e-3) if seconds > 1e-3 else seconds
