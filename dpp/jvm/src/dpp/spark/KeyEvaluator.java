package dpp.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import scala.Option;
import scala.runtime.AbstractPartialFunction;

/**
 * A fact-side join key that is an expression of partition columns ({@code f.sid + 1},
 * {@code f.a + f.b}, {@code cast(f.k as double)}), evaluated by Spark's own expression code
 * on a partition's values: so the split loader tests "could this partition's key match a
 * build-side value" with exactly Spark's arithmetic, casts, overflow and time-zone rules,
 * never a Python imitation of them. Values go in as the partitions' folder texts (cast to
 * each column's type in the session time zone, as {@link DppFileIndex} casts them) and come
 * out as text (Spark's cast to string), read back by Python in the key's type.
 */
public final class KeyEvaluator {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Expression bound;
    private final DataType[] inputTypes;
    private final String timeZone;

    KeyEvaluator(Expression key, long[] refs, String timeZone) {
        this.timeZone = timeZone;
        this.inputTypes = new DataType[refs.length];
        Map<Long, Integer> position = new HashMap<>();
        for (int i = 0; i < refs.length; i++) {
            position.put(refs[i], i);
        }
        DataType[] types = this.inputTypes;
        this.bound = key.transform(new AbstractPartialFunction<Expression, Expression>() {
            @Override
            public boolean isDefinedAt(Expression e) {
                return e instanceof AttributeReference;
            }

            @Override
            public Expression apply(Expression e) {
                if (e instanceof AttributeReference) {
                    AttributeReference a = (AttributeReference) e;
                    Integer i = position.get(a.exprId().id());
                    if (i == null) {
                        throw new IllegalArgumentException("dpp: key " + key.sql()
                            + " reads " + a.sql() + ", which is not a partition column");
                    }
                    types[i] = a.dataType();
                    return new BoundReference(i, a.dataType(), true);
                }
                return e;
            }
        });
        for (int i = 0; i < types.length; i++) {
            if (types[i] == null) {
                throw new IllegalArgumentException("dpp: key " + key.sql()
                    + " does not read reference #" + refs[i]);
            }
        }
    }

    /** The key's type as Spark names it ({@code int}, {@code decimal(10,2)}, ...). */
    public String type() {
        return bound.dataType().simpleString();
    }

    /**
     * {@code rows}: a JSON list of partitions, each a list of texts (null: the NULL
     * partition) in the order of the references given at construction. Answer: a JSON list,
     * per partition the key's value as text, null for NULL, or {@code {"error": "..."}} where
     * Spark's evaluation raises (an ANSI overflow): the loader then keeps the partition.
     */
    public String evaluate(String rows) throws Exception {
        JsonNode in = JSON.readTree(rows);
        ArrayNode out = JSON.createArrayNode();
        Option<String> tz = Option.apply(timeZone);
        for (JsonNode row : in) {
            try {
                Object[] values = new Object[inputTypes.length];
                for (int i = 0; i < inputTypes.length; i++) {
                    JsonNode v = row.get(i);
                    if (v == null || v.isNull()) {
                        values[i] = null;
                    } else {
                        values[i] = DppFileIndex.castText(v.asText(), inputTypes[i], timeZone);
                    }
                }
                Object result = bound.eval(new GenericInternalRow(values));
                if (result == null) {
                    out.addNull();
                } else {
                    Literal lit = new Literal(result, bound.dataType());
                    Object text = new Cast(lit, DataTypes.StringType, tz).eval(null);
                    out.add(text == null ? null : text.toString());
                }
            } catch (Exception e) {
                out.addObject().put("error", String.valueOf(e.getMessage()));
            }
        }
        return out.toString();
    }

    static List<Long> references(Expression e) {
        List<Long> ids = new ArrayList<>();
        for (Attribute a : CollectionConverters.asJava(e.references().toSeq())) {
            if (a instanceof AttributeReference && !ids.contains(a.exprId().id())) {
                ids.add(a.exprId().id());
            }
        }
        return ids;
    }
}
