package com.github.svclab.impl.apps;

import java.util.List;

/** The apps this host implements. */
public final class Apps {
  private Apps() {}

  public static final List<String> NAMES = List.of(SelectApp.NAME, RpcopsApp.NAME);

  /** A new, unconfigured instance of the named app. */
  public static App lookup(String name) {
    switch (name) {
      case SelectApp.NAME:
        return new SelectApp();
      case RpcopsApp.NAME:
        return new RpcopsApp();
      default:
        throw new ConfigException("unknown app \"" + name + "\" (the Java host implements " + NAMES + ")");
    }
  }
}
