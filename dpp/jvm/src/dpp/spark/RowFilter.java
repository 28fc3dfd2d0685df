package dpp.spark;

import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

/**
 * A data column's dynamic filter as a Catalyst {@code Filter} right above the relation it
 * prunes: {@code col IN (values)} or {@code col BETWEEN lo AND hi OR ...}, in the column's own
 * type. Spark's scan planning pushes it into Parquet, whose reader skips the row groups it
 * rules out, and the rows it rejects could not have matched the join. Python decides the
 * terms ({@code dpp/row_groups.py}); a term this class cannot state in the column's type
 * leaves the relation unfiltered (a loss of speed, never of rows).
 */
final class RowFilter {
    private RowFilter() {
    }

    static LogicalPlan over(LogicalRelation relation, JsonNode specs) {
        Expression condition = null;
        for (JsonNode spec : specs) {
            Attribute attr = attribute(relation, spec.get("attr").asLong());
            if (attr == null || !spec.get("type").asText().equals(attr.dataType().simpleString())) {
                continue;
            }
            Expression term = term(attr, spec);
            if (term != null) {
                condition = condition == null ? term : new And(condition, term);
            }
        }
        // Spark's own rule states a long IN list as a hash set (InSet, past
        // spark.sql.optimizer.inSetConversionThreshold values): a row filter that spares a
        // costly join may hold thousands of values, tested per row
        return condition == null ? relation
            : org.apache.spark.sql.catalyst.optimizer.OptimizeIn$.MODULE$.apply(
                new Filter(condition, relation));
    }

    private static Attribute attribute(LogicalRelation relation, long exprId) {
        scala.collection.Iterator<org.apache.spark.sql.catalyst.expressions.AttributeReference> it =
            relation.output().iterator();
        while (it.hasNext()) {
            Attribute a = it.next();
            if (a.exprId().id() == exprId) {
                return a;
            }
        }
        return null;
    }

    private static Expression term(Attribute attr, JsonNode spec) {
        DataType type = attr.dataType();
        if (spec.has("in")) {
            List<Expression> values = new ArrayList<>();
            for (JsonNode v : spec.get("in")) {
                values.add(literal(v.asText(), type));
            }
            if (values.isEmpty()) {
                return Literal.create(false, DataTypes.BooleanType);
            }
            // perRow: the set is Spark's test of each row only. Spark pushes an IN on a plain
            // column into Parquet, whose reader tests every value against every row group's
            // statistics, dictionary and page index (TPC-DS q85 at SF1: 9,548 values over
            // 2,115 files, 13 s). Over knownnullable(col) — Spark's tag, the column's own value
            // (eval and code are the child's), no rule removes it — it is not pushed (the
            // relation's ranges, a term of their own, are); coalesce(col) would be simplified
            // back to the column by the optimizer's later batches
            Expression value = spec.path("perRow").asBoolean(false)
                ? new org.apache.spark.sql.catalyst.expressions.KnownNullable(attr)
                : attr;
            return new In(value, CollectionConverters.asScala(values).toSeq());
        }
        Expression out = null;
        for (JsonNode r : spec.get("ranges")) {
            // null: that side unbounded (a comparison's filter, f.day <= max(d.last))
            String lo = r.get(0).isNull() ? null : r.get(0).asText();
            String hi = r.get(1).isNull() ? null : r.get(1).asText();
            Expression t;
            if (lo == null && hi == null) {
                return null;
            } else if (lo == null) {
                t = new LessThanOrEqual(attr, literal(hi, type));
            } else if (hi == null) {
                t = new GreaterThanOrEqual(attr, literal(lo, type));
            } else {
                t = lo.equals(hi) ? new EqualTo(attr, literal(lo, type))
                    : new And(new GreaterThanOrEqual(attr, literal(lo, type)),
                              new LessThanOrEqual(attr, literal(hi, type)));
            }
            out = out == null ? t : new Or(out, t);
        }
        return out;
    }

    private static Literal literal(String text, DataType type) {
        Object value;
        if (type.equals(DataTypes.IntegerType)) {
            value = Integer.valueOf(text);
        } else if (type.equals(DataTypes.LongType)) {
            value = Long.valueOf(text);
        } else if (type.equals(DataTypes.ShortType)) {
            value = Short.valueOf(text);
        } else if (type.equals(DataTypes.ByteType)) {
            value = Byte.valueOf(text);
        } else if (type.equals(DataTypes.DateType)) {
            value = LocalDate.parse(text);
        } else if (type.equals(DataTypes.StringType)) {
            value = text;
        } else {
            throw new IllegalArgumentException("dpp: no row filter on a column of type " + type);
        }
        return Literal.create(value, type);
    }
}
