package com.github.svclab.impl.apps;

import com.github.svclab.impl.Caller;
import com.github.svclab.impl.Service;
import java.util.List;
import java.util.Map;

/**
 * An app's components, as the Go app in apps/NAME defines them: the same
 * names, services, dependencies and answers.
 */
public interface App {
  String name();

  /** Component names, in the app's order. */
  List<String> components();

  /** The components a component calls. */
  List<String> deps(String component);

  /**
   * Checks the app's config, the [app] table as JSON, strictly: an unknown
   * key or a bad value is a ConfigException naming the key.
   */
  void configure(String configJson);

  /** Builds a component; peers holds a caller for each of its deps. */
  Service build(String component, Map<String, Caller> peers);
}
