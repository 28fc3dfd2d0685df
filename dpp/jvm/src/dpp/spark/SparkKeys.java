package dpp.spark;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.DynamicPruningExpression;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.FileSourceScanExec;
import org.apache.spark.sql.execution.InSubqueryExec;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SQLExecution;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;

/**
 * The keys Spark's own dynamic partition pruning resolved for the scan that is listing a
 * {@link DppFileIndex}, read where the index lists.
 *
 * <p>Spark lists a scan's files with its static partition filters only and applies its
 * dynamic ones to that listing afterwards; but by then it has already resolved them: a scan's
 * subqueries are waited for before its input is made, and the input is what lists. So the
 * values of each {@code DynamicPruningExpression(InSubqueryExec)} on a partition column of
 * the scan are known when the index is asked: the keys of the broadcast Spark made of the
 * dimension anyway. The scan is found in the plan of the execution the listing thread runs
 * for ({@code SQLExecution.getQueryExecution}), by its relation's index being this one.
 *
 * <p>Only where that is unambiguous: exactly one scan in the plan reads through this index or
 * another of its token (a listing answered for two scans must keep what either needs, and
 * their dynamic filters may differ), every value resolved, the
 * pruned expression a partition column itself or the column widened to a wider integer type
 * (an int partition column against bigint keys), of an integer type (the values come as JSON
 * numbers, of the pruned expression's type: the build key's). Anything else: nothing, and
 * dpp's own build side runs.
 */
final class SparkKeys {
    private SparkKeys() {
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    /** {@code {column: {"type": "int", "values": [..]}, ...}} (several filters on one
     * column: one entry each under {@code column}'s list), or null. */
    static ObjectNode of(SparkSession session, DppFileIndex index, List<String> partitionColumns) {
        String id = session.sparkContext().getLocalProperty(SQLExecution.EXECUTION_ID_KEY());
        if (id == null) {
            return null;
        }
        QueryExecution qe;
        try {
            qe = SQLExecution.getQueryExecution(Long.parseLong(id));
        } catch (NumberFormatException e) {
            return null;
        }
        if (qe == null) {
            return null;
        }
        List<FileSourceScanExec> scans = new ArrayList<>();
        walk(qe.executedPlan(), index, scans, 0);
        if (scans.size() != 1) {
            return null;
        }
        ObjectNode out = JSON.createObjectNode();
        scala.collection.Iterator<Expression> it = scans.get(0).partitionFilters().iterator();
        while (it.hasNext()) {
            Expression e = it.next();
            if (!(e instanceof DynamicPruningExpression)) {
                continue;
            }
            Expression c = ((DynamicPruningExpression) e).child();
            if (!(c instanceof InSubqueryExec)) {
                continue;
            }
            InSubqueryExec in = (InSubqueryExec) c;
            Expression pruned = in.child();
            if (pruned instanceof Cast && widens(((Cast) pruned).child().dataType(),
                    pruned.dataType())) {
                // an integer column widened to the build key's type (an int partition column
                // against bigint keys): exact, each value of the column one value of the keys'
                pruned = ((Cast) pruned).child();
            }
            if (!(pruned instanceof AttributeReference)) {
                continue;
            }
            String name = ((AttributeReference) pruned).name();
            String column = null;
            for (String p : partitionColumns) {
                if (p.equalsIgnoreCase(name)) {
                    column = p;
                }
            }
            String type = integral(in.child().dataType());
            scala.Option<Object[]> values = in.values();
            if (column == null || type == null || !values.isDefined()) {
                continue;
            }
            ArrayNode vs = JSON.createArrayNode();
            boolean fits = true;
            for (Object v : values.get()) {
                if (v instanceof Number) {
                    vs.add(((Number) v).longValue());
                } else {
                    fits = false;   // a NULL or a value of another class: not this column's
                    break;
                }
            }
            if (!fits) {
                continue;
            }
            ArrayNode list = out.has(column) ? (ArrayNode) out.get(column)
                : out.putArray(column);
            list.addObject().put("type", type).set("values", vs);
        }
        return out.size() == 0 ? null : out;
    }

    /** Whether every value of integer type {@code from} is one value of integer type
     * {@code to} (the same or a wider type). */
    private static boolean widens(DataType from, DataType to) {
        String f = integral(from);
        String t = integral(to);
        if (f == null || t == null) {
            return false;
        }
        java.util.List<String> order = java.util.Arrays.asList("tinyint", "smallint", "int",
            "bigint");
        return order.indexOf(f) <= order.indexOf(t);
    }

    private static String integral(DataType t) {
        if (t instanceof IntegerType) {
            return "int";
        }
        if (t instanceof LongType) {
            return "bigint";
        }
        if (t instanceof ShortType) {
            return "smallint";
        }
        if (t instanceof ByteType) {
            return "tinyint";
        }
        return null;
    }

    private static void walk(SparkPlan p, DppFileIndex index, List<FileSourceScanExec> found,
                             int depth) {
        if (depth > 500) {
            found.add(null);   // too deep to be sure: more than one
            found.add(null);
            return;
        }
        if (p instanceof AdaptiveSparkPlanExec) {
            walk(((AdaptiveSparkPlanExec) p).executedPlan(), index, found, depth + 1);
        } else if (p instanceof QueryStageExec) {
            walk(((QueryStageExec) p).plan(), index, found, depth + 1);
        } else if (p instanceof FileSourceScanExec) {
            Object location = ((FileSourceScanExec) p).relation().location();
            // this index, or another of the same token (a copy of the relation in another
            // optimizer run of the query, a subquery's): Python answers a token once for all
            if (location == index || (location instanceof DppFileIndex
                    && ((DppFileIndex) location).token().equals(index.token()))) {
                found.add((FileSourceScanExec) p);
            }
        }
        scala.collection.Iterator<SparkPlan> ch = p.children().iterator();
        while (ch.hasNext()) {
            walk(ch.next(), index, found, depth + 1);
        }
        scala.collection.Iterator<SparkPlan> subs = p.subqueries().iterator();
        while (subs.hasNext()) {
            walk(subs.next(), index, found, depth + 1);
        }
    }
}
