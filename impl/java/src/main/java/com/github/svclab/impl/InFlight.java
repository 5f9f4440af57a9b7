package com.github.svclab.impl;

/** Counts calls in flight behind a gate that, once closed, admits none. */
final class InFlight {
  private int n;
  private boolean closed;

  synchronized boolean enter() {
    if (closed) {
      return false;
    }
    n++;
    return true;
  }

  synchronized void leave() {
    if (--n == 0) {
      notifyAll();
    }
  }

  synchronized void close() {
    closed = true;
  }

  synchronized boolean closed() {
    return closed;
  }

  synchronized int count() {
    return n;
  }

  /** Waits until no call is in flight or the time is up; returns whether idle. */
  synchronized boolean awaitIdle(long millis) throws InterruptedException {
    long end = System.nanoTime() + millis * 1_000_000L;
    while (n > 0) {
      long left = (end - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        return false;
      }
      wait(left);
    }
    return true;
  }
}
