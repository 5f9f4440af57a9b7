"""svclab analysis: run-level statistics, factorial designs and reports."""

__version__ = "0.1.0"
