package com.github.svclab.impl.apps;

/** A bad [app] value, named by its key, as Go's runtime.KeyErrorf words it. */
public final class ConfigException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public ConfigException(String key, String message) {
    super(key + ": " + message);
  }

  public ConfigException(String message) {
    super(message);
  }
}
