package dpp.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.internal.SessionState;
import org.apache.spark.sql.sources.BaseRelation;

/**
 * What differs between Spark lines, for Spark 3.5 (Scala 2.12): {@code SparkSession} and
 * {@code Dataset} of {@code org.apache.spark.sql} are the classic ones. Same methods as
 * {@code dpp/jvm/compat/spark4}'s.
 */
final class Compat {
    /** The Spark line this shim was written for (the jar's manifest names the exact one). */
    static final String LINE = "3.5";

    private Compat() {
    }

    static SparkSessionExtensions extensions(SparkSession s) {
        return s.extensions();
    }

    static SessionState sessionState(SparkSession s) {
        return s.sessionState();
    }

    static SparkSession cloneSession(SparkSession s) {
        return s.cloneSession();
    }

    static Dataset<Row> ofRows(SparkSession s, LogicalPlan plan) {
        return Dataset.ofRows(s, plan);
    }

    static <K, V> scala.collection.immutable.Map<K, V> toMap(java.util.Map<K, V> m) {
        scala.collection.immutable.Map<K, V> out = scala.collection.immutable.Map$.MODULE$.empty();
        for (java.util.Map.Entry<K, V> e : m.entrySet()) {
            out = out.$plus(new scala.Tuple2<K, V>(e.getKey(), e.getValue()));
        }
        return out;
    }

    /** {@code lr} over another relation, all else kept. */
    static LogicalRelation withRelation(LogicalRelation lr, BaseRelation relation) {
        return lr.copy(relation, lr.output(), lr.catalogTable(), lr.isStreaming());
    }

    /** Spark 3.5 has no rule run before its relation resolution (no hint resolution rules):
     * false, nothing injected. */
    static boolean injectBeforeRelations(SparkSessionExtensions ext,
            scala.Function1<SparkSession, org.apache.spark.sql.catalyst.rules.Rule<LogicalPlan>> rule) {
        return false;
    }
}
