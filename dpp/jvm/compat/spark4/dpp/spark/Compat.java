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
 * What differs between Spark lines, for Spark 4.x (Scala 2.13): the classic session and
 * Dataset live in {@code org.apache.spark.sql.classic}. The rest of {@code dpp/jvm/src} is one
 * source for every line and calls this class; {@code dpp/jvm/compat/spark35} holds Spark
 * 3.5's version of it.
 */
final class Compat {
    /** The Spark line this shim was written for (the jar's manifest names the exact one). */
    static final String LINE = "4";

    private Compat() {
    }

    private static org.apache.spark.sql.classic.SparkSession classic(SparkSession s) {
        return (org.apache.spark.sql.classic.SparkSession) s;
    }

    static SparkSessionExtensions extensions(SparkSession s) {
        return classic(s).extensions();
    }

    static SessionState sessionState(SparkSession s) {
        return classic(s).sessionState();
    }

    static SparkSession cloneSession(SparkSession s) {
        return classic(s).cloneSession();
    }

    static Dataset<Row> ofRows(SparkSession s, LogicalPlan plan) {
        return org.apache.spark.sql.classic.Dataset.ofRows(classic(s), plan);
    }

    static <K, V> scala.collection.immutable.Map<K, V> toMap(java.util.Map<K, V> m) {
        return scala.collection.immutable.Map$.MODULE$.from(
            scala.jdk.javaapi.CollectionConverters.asScala(m));
    }

    /** Injects a rule run before Spark resolves relations (its hint batch): true when this
     * Spark line has such a place. */
    static boolean injectBeforeRelations(SparkSessionExtensions ext,
            scala.Function1<SparkSession, org.apache.spark.sql.catalyst.rules.Rule<LogicalPlan>> rule) {
        ext.injectHintResolutionRule(rule);
        return true;
    }

    /** {@code lr} over another relation, all else kept. */
    static LogicalRelation withRelation(LogicalRelation lr, BaseRelation relation) {
        return lr.copy(relation, lr.output(), lr.catalogTable(), lr.isStreaming(), lr.stream());
    }
}
