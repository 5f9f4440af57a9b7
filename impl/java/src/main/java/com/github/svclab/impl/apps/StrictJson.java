package com.github.svclab.impl.apps;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import java.math.BigDecimal;
import java.util.Set;

/** Decodes an app's config object as Go's json.Decoder with DisallowUnknownFields does. */
final class StrictJson {
  private final JsonObject obj;

  StrictJson(String app, String json, Set<String> keys) {
    JsonElement e;
    try {
      e = JsonParser.parseString(json);
    } catch (JsonParseException ex) {
      throw new ConfigException("decode " + app + " config: " + ex.getMessage());
    }
    if (e == null || !e.isJsonObject()) {
      throw new ConfigException("decode " + app + " config: not a JSON object: " + json);
    }
    obj = e.getAsJsonObject();
    for (String k : obj.keySet()) {
      if (!keys.contains(k)) {
        throw new ConfigException("decode " + app + " config: json: unknown field \"" + k + "\"");
      }
    }
  }

  String string(String key, String dflt) {
    JsonElement e = obj.get(key);
    if (e == null || e.isJsonNull()) {
      return dflt;
    }
    if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isString()) {
      throw new ConfigException(key, "must be a string, got " + e);
    }
    return e.getAsString();
  }

  long integer(String key, long dflt) {
    JsonElement e = obj.get(key);
    if (e == null || e.isJsonNull()) {
      return dflt;
    }
    if (e.isJsonPrimitive()) {
      JsonPrimitive p = e.getAsJsonPrimitive();
      if (p.isNumber()) {
        try {
          return new BigDecimal(p.getAsString()).longValueExact();
        } catch (ArithmeticException | NumberFormatException ex) {
          // not an integer that fits
        }
      }
    }
    throw new ConfigException(key, "must be an integer, got " + e);
  }
}
