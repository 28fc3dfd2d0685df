package dpp.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.util.Iterator;
import java.util.Map;

/**
 * Checks a wire message against the contract both sides share: {@code
 * dpp/analysis/wire_schema.json}, compiled in as {@link WireSchema#TEXT}. It reads the same
 * subset of JSON Schema as Python's {@code dpp.analysis.plan_wire.check}, the same way
 * ({@code prefixItems} is a tuple of exactly those items; {@code anyOf} reports the branch
 * that got furthest), so a field renamed or retyped on either side is refused on the other,
 * named by its path, and never read as "nothing kept".
 */
public final class WireCheck {
    private static final JsonNode SCHEMA = parse();

    /** The contract's version: every message carries it. */
    static final int VERSION = SCHEMA.path("version").asInt();

    private WireCheck() {
    }

    private static JsonNode parse() {
        try {
            return new ObjectMapper().readTree(WireSchema.TEXT);
        } catch (Exception e) {
            throw new IllegalStateException("dpp: the wire schema compiled into the jar is "
                + "not JSON", e);
        }
    }

    /** Why {@code value} is not a {@code message} of the contract ("path what"), or null. */
    static String problem(String message, JsonNode value) {
        String[] found = check(SCHEMA.path("messages").path(message), value, "");
        if (found == null) {
            return null;
        }
        return (found[0].isEmpty() ? "the message" : found[0]) + " " + found[1];
    }

    /** {@link #problem} of a message's text (for tests and for callers holding text). */
    public static String problemOf(String message, String json) {
        try {
            return problem(message, new ObjectMapper().readTree(json));
        } catch (Exception e) {
            return "the message is not JSON: " + e.getMessage();
        }
    }

    private static JsonNode resolve(JsonNode s) {
        while (s.has("$ref")) {
            String ref = s.get("$ref").asText();
            s = SCHEMA.path("$defs").path(ref.substring(ref.lastIndexOf('/') + 1));
        }
        return s;
    }

    private static boolean typed(String kind, JsonNode v) {
        switch (kind) {
            case "object":
                return v.isObject();
            case "array":
                return v.isArray();
            case "string":
                return v.isTextual();
            case "integer":
                return v.isIntegralNumber();
            case "number":
                return v.isNumber();
            case "boolean":
                return v.isBoolean();
            case "null":
                return v.isNull();
            default:
                return false;
        }
    }

    private static String[] check(JsonNode s, JsonNode v, String path) {
        s = resolve(s);
        if (s.has("not")) {
            return new String[] {path, "is not expected here"};
        }
        if (s.has("anyOf")) {
            String[] best = null;
            for (JsonNode branch : s.get("anyOf")) {
                String[] found = check(branch, v, path);
                if (found == null) {
                    return null;
                }
                if (best == null || found[0].length() > best[0].length()) {
                    best = found;
                }
            }
            return best;
        }
        if (s.has("const") && !s.get("const").equals(v)) {
            return new String[] {path, "is " + v + ", expected " + s.get("const")};
        }
        if (s.has("enum")) {
            boolean ok = false;
            for (JsonNode e : s.get("enum")) {
                ok |= e.equals(v);
            }
            if (!ok) {
                return new String[] {path, "is " + v + ", expected one of " + s.get("enum")};
            }
        }
        if (s.has("type")) {
            JsonNode t = s.get("type");
            boolean ok = false;
            if (t.isArray()) {
                for (JsonNode k : t) {
                    ok |= typed(k.asText(), v);
                }
            } else {
                ok = typed(t.asText(), v);
            }
            if (!ok) {
                return new String[] {path, "is " + v + ", expected " + t};
            }
        }
        if (s.has("prefixItems")) {
            JsonNode items = s.get("prefixItems");
            if (!v.isArray() || v.size() != items.size()) {
                String what = s.has("description") ? s.get("description").asText()
                    : "a list of " + items.size();
                return new String[] {path, "is " + v + ", not " + what};
            }
            for (int i = 0; i < items.size(); i++) {
                String[] found = check(items.get(i), v.get(i), path + "[" + i + "]");
                if (found != null) {
                    return found;
                }
            }
        }
        if (v.isArray() && s.has("items")) {
            for (int i = 0; i < v.size(); i++) {
                String[] found = check(s.get("items"), v.get(i), path + "[" + i + "]");
                if (found != null) {
                    return found;
                }
            }
        }
        if (v.isObject()) {
            JsonNode props = s.path("properties");
            for (JsonNode r : s.path("required")) {
                if (!v.has(r.asText())) {
                    return new String[] {path, "has no field '" + r.asText() + "'"};
                }
            }
            Iterator<Map.Entry<String, JsonNode>> it = v.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                JsonNode sub = props.has(e.getKey()) ? props.get(e.getKey())
                    : s.get("additionalProperties");
                if (sub != null) {
                    String where = path.isEmpty() ? e.getKey() : path + "." + e.getKey();
                    String[] found = check(sub, e.getValue(), where);
                    if (found != null) {
                        return found;
                    }
                }
            }
        }
        return null;
    }
}
