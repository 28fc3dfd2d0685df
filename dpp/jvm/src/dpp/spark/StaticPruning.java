package dpp.spark;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.planning.PhysicalOperation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.CatalogFileIndex;
import org.apache.spark.sql.execution.datasources.DataSourceStrategy$;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.PartitioningUtils;
import org.apache.spark.sql.types.StructField;
import scala.Option;
import scala.Tuple3;
import scala.collection.Seq;

/**
 * The catalog relations Spark's own static partition pruning leaves empty.
 *
 * <p>Spark's {@code PruneFileSourcePartitions} hands a catalog table's partition filters (the
 * query's, and the IS NOT NULL a join implies) to the metastore before it plans joins, and
 * gives the relation the size of what is left. A relation left with no partition is planned as
 * empty: a broadcast of nothing, an adaptive plan that never runs the other side. dpp's file
 * index hides a relation from that rule, so a relation dpp wrapped would be planned at the
 * whole table's size and the other side evaluated where Spark never evaluates it (under ANSI an
 * error where Spark returns no row). Such a relation is left to Spark: its plan is Spark's, and
 * dpp could not remove anything from nothing anyway.
 *
 * <p>The same walk as Spark's rule: the topmost projections and filters over each catalog
 * relation, their deterministic conjuncts without subqueries that read partition columns only,
 * and what the session catalog's {@code listPartitionsByFilter} would keep under them: every
 * partition's name (one light metastore call), tested by Spark's own
 * {@code ExternalCatalogUtils.prunePartitionsByFilter}, the evaluation that call ends with.
 * Anything unexpected: not known empty (dpp's usual path, which never reads more than Spark).
 *
 * <p>The names listed for a relation are kept under a token ({@link #takeNames}) the plan's
 * description carries: the split loader reads the same names for that query instead of
 * listing them again (one metastore call fewer, under the catalog's lock every query of the
 * driver needs). They are the names Spark's own static pruning works from for that query, so
 * the loader sees what Spark sees.
 */
final class StaticPruning {
    private StaticPruning() {
    }

    /** What the walk found: the relations left empty, and the token of the names listed for
     * each relation it listed (by identity). */
    static final class Result {
        final Set<LogicalPlan> empty;
        final Map<LogicalPlan, String> names;

        Result(Set<LogicalPlan> empty, Map<LogicalPlan, String> names) {
            this.empty = empty;
            this.names = names;
        }
    }

    /** The catalog relations of {@code plan} (by identity) that Spark's static partition
     * filters leave without a partition, and the names listed on the way. */
    static Result catalogRelations(LogicalPlan plan) {
        Map<LogicalPlan, Boolean> out = new IdentityHashMap<>();
        Map<LogicalPlan, String> names = new IdentityHashMap<>();
        try {
            walk(plan, out, names);
        } catch (Throwable t) {
            // not known empty: dpp's usual path
        }
        return new Result(out.keySet(), names);
    }

    private static void walk(LogicalPlan p, Map<LogicalPlan, Boolean> out,
                             Map<LogicalPlan, String> names) {
        Option<?> op = PhysicalOperation.unapply(p);
        Tuple3<?, ?, ?> t = op.isDefined() ? (Tuple3<?, ?, ?>) op.get() : null;
        if (t != null && t._3() instanceof LogicalRelation) {
            LogicalRelation lr = (LogicalRelation) t._3();
            @SuppressWarnings("unchecked")
            Seq<Expression> filters = (Seq<Expression>) t._2();
            if (leavesNothing(lr, CollectionConverters.asJava(filters), names)) {
                out.put(lr, Boolean.TRUE);
            }
            return;
        }
        // the projections and filters down to that leaf lead nowhere else: go on below it
        LogicalPlan leaf = t != null ? (LogicalPlan) t._3() : p;
        for (LogicalPlan c : CollectionConverters.asJava(leaf.children())) {
            walk(c, out, names);
        }
    }

    // names listed, by token, until the loader takes them; the oldest go first past LISTED
    // entries or LISTED_CHARS characters in all (a plan dpp then does not prune leaves its
    // names unread; a loader whose names went lists them itself)
    private static final int LISTED = 256;
    private static final long LISTED_CHARS = 8L * 1024 * 1024;
    private static final java.util.LinkedHashMap<String, StringBuilder> NAMES =
        new java.util.LinkedHashMap<>();
    private static long namesChars = 0;

    private static String keep(scala.collection.Seq<String> names) {
        StringBuilder b = new StringBuilder();
        java.util.Iterator<String> it = CollectionConverters.asJava(names).iterator();
        while (it.hasNext()) {
            b.append(it.next());
            if (it.hasNext()) {
                b.append('\n');
            }
        }
        return keepText(b);
    }

    /** Keeps names already one per line until the loader takes them ({@link #takeNames}). */
    static String keepText(StringBuilder b) {
        return keepText(java.util.UUID.randomUUID().toString(), b);
    }

    /** Whether names are kept under {@code token} now. */
    static boolean holds(String token) {
        synchronized (NAMES) {
            return NAMES.containsKey(token);
        }
    }

    /** {@link #keepText} under a token of the caller's (one that stands for the same names
     * each time it is kept). */
    static String keepText(String token, StringBuilder b) {
        synchronized (NAMES) {
            NAMES.put(token, b);
            namesChars += b.length();
            java.util.Iterator<Map.Entry<String, StringBuilder>> old =
                NAMES.entrySet().iterator();
            while ((NAMES.size() > LISTED || namesChars > LISTED_CHARS) && old.hasNext()) {
                namesChars -= old.next().getValue().length();
                old.remove();
            }
        }
        return token;
    }

    /** The names listed under {@code token}, one per line (escaped paths: no newline inside
     * one), once; null when they were taken or dropped. */
    static StringBuilder takeNames(String token) {
        synchronized (NAMES) {
            StringBuilder text = NAMES.remove(token);
            if (text != null) {
                namesChars -= text.length();
            }
            return text;
        }
    }

    private static boolean leavesNothing(LogicalRelation lr, List<Expression> filters,
                                         Map<LogicalPlan, String> listed) {
        if (filters.isEmpty() || !(lr.relation() instanceof HadoopFsRelation)
                || lr.catalogTable().isEmpty()) {
            return false;
        }
        HadoopFsRelation rel = (HadoopFsRelation) lr.relation();
        if (!(rel.location() instanceof CatalogFileIndex) || rel.partitionSchema().isEmpty()) {
            return false;
        }
        boolean caseSensitive = org.apache.spark.sql.internal.SQLConf.get().caseSensitiveAnalysis();
        java.util.Set<String> partNames = new java.util.HashSet<>();
        for (StructField f : rel.partitionSchema().fields()) {
            partNames.add(caseSensitive ? f.name() : f.name().toLowerCase(Locale.ROOT));
        }
        java.util.Set<Long> partIds = new java.util.HashSet<>();
        List<Attribute> output = new ArrayList<>();
        for (Attribute a : CollectionConverters.asJava(lr.output())) {
            output.add(a);
            String n = caseSensitive ? a.name() : a.name().toLowerCase(Locale.ROOT);
            if (partNames.contains(n)) {
                partIds.add(a.exprId().id());
            }
        }
        List<Expression> plain = new ArrayList<>();
        for (Expression f : filters) {
            if (f.deterministic() && !SubqueryExpression.hasSubquery(f)) {
                plain.add(f);
            }
        }
        List<Expression> normalized = CollectionConverters.asJava(DataSourceStrategy$.MODULE$.normalizeExprs(
            CollectionConverters.asScala(plain).toList(),
            CollectionConverters.asScala(output).toList()));
        List<Expression> keyFilters = new ArrayList<>();
        for (Expression f : normalized) {
            boolean onlyPartitions = true;
            for (Attribute a : CollectionConverters.asJava(f.references().toSeq())) {
                onlyPartitions &= partIds.contains(a.exprId().id());
            }
            if (onlyPartitions) {
                keyFilters.add(f);
            }
        }
        if (keyFilters.isEmpty()) {
            return false;
        }
        CatalogTable table = lr.catalogTable().get();
        // Names only, tested here by Spark's own evaluation of partition filters: what
        // listPartitionsByFilter returns in the end (a metastore's own filtering only narrows
        // what that evaluation sees), without the metastore building a partition object per
        // partition (a filter it cannot push, IS NOT NULL on an integer column, makes it build
        // every one: minutes at 100,000 partitions). The external catalog is asked directly
        // (the session catalog would first ask whether the database and the table exist), and
        // the names are tested a batch at a time: one kept partition answers the question.
        scala.collection.Seq<String> names = null;
        if (table.identifier().database().isDefined()) {
            org.apache.spark.sql.catalyst.catalog.ExternalCatalog external =
                Compat.sessionState(rel.sparkSession()).catalog().externalCatalog();
            org.apache.spark.sql.catalyst.catalog.ExternalCatalog unwrapped =
                external instanceof org.apache.spark.sql.catalyst.catalog.ExternalCatalogWithListener
                    ? ((org.apache.spark.sql.catalyst.catalog.ExternalCatalogWithListener) external)
                        .unwrapped()
                    : external;
            if (unwrapped.getClass().getName().equals(HiveByName.CATALOG)) {
                // a Hive metastore: the client's names, off the catalog's lock
                names = HiveByName.names(unwrapped, table);
            }
            if (names == null) {
                names = external.listPartitionNames(table.identifier().database().get(),
                    table.identifier().table(), Option.empty());
            }
        } else {
            names = Compat.sessionState(rel.sparkSession()).catalog()
                .listPartitionNames(table.identifier(), Option.empty());
        }
        listed.put(lr, keep(names));
        String tz = org.apache.spark.sql.internal.SQLConf.get().sessionLocalTimeZone();
        scala.collection.immutable.List<Expression> tests =
            CollectionConverters.asScala(keyFilters).toList();
        List<CatalogTablePartition> batch = new ArrayList<>();
        int size = FIRST_BATCH;
        java.util.Iterator<String> it = CollectionConverters.asJava(names).iterator();
        while (it.hasNext()) {
            String name = it.next();
            batch.add(new CatalogTablePartition(PartitioningUtils.parsePathFragment(name),
                CatalogStorageFormat.empty(), scala.collection.immutable.Map$.MODULE$.empty(),
                0L, 0L, Option.empty()));
            if (batch.size() == size || !it.hasNext()) {
                if (!ExternalCatalogUtils.prunePartitionsByFilter(table,
                        CollectionConverters.asScala(batch).toList(), tests, tz).isEmpty()) {
                    return false;
                }
                batch.clear();
                size = Math.min(size * 4, LAST_BATCH);
            }
        }
        return true;
    }

    /** Partitions tested at a time, growing: the first few usually answer (the filters a join
     * implies, IS NOT NULL, keep nearly every partition), and each test compiles the filters
     * once, so a table Spark's filters leave empty is tested in large batches. */
    private static final int FIRST_BATCH = 16;
    private static final int LAST_BATCH = 1024;
}
