package dpp.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.CatalogFileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionPath;
import org.apache.spark.sql.execution.datasources.PartitionSpec;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * Spark's {@code CatalogFileIndex.filterPartitions}, with the metastore asked by name.
 *
 * <p>Spark asks the metastore for the partitions its filters admit in one
 * {@code listPartitionsByFilter} call, and then tests what comes back with
 * {@code ExternalCatalogUtils.prunePartitionsByFilter}: that evaluation decides, the
 * metastore's own filtering only narrows what it sees. A metastore evaluates a filter over
 * partition values stored as text by scanning every partition of the table (Hive's
 * {@code ObjectStore}: seconds at 100,000 partitions, for the thirty a star join keeps). Here
 * the partitions dpp kept are fetched by name and the same evaluation runs on them. The
 * objects are the ones Spark's call would return; the index built from them is built as Spark
 * builds it (values by {@code CatalogTablePartition.toRow}, paths qualified by their
 * filesystem, the catalog index's own file-status cache).
 */
final class CatalogByName {
    private CatalogByName() {
    }

    private static scala.collection.immutable.Map<String, String> toScala(
            java.util.Map<String, String> m) {
        scala.collection.immutable.Map<String, String> out =
            scala.collection.immutable.Map$.MODULE$.empty();
        for (java.util.Map.Entry<String, String> e : m.entrySet()) {
            out = out.updated(e.getKey(), e.getValue());
        }
        return out;
    }

    /** Past this many partitions kept, one call by filter beats one call per partition. */
    static final int MAX_BY_NAME = 200;

    /** The index Spark's {@code filterPartitions(filters)} would make, restricted to the
     * partitions dpp kept ({@code kept}: their catalog values, column to raw text, null for
     * NULL), or null where this way does not apply (too many kept, anything unexpected: the
     * caller asks Spark's). A partition the split loader did not keep is one it proved
     * cannot match, which is all {@code filters} add to Spark's own filters: so the kept
     * partitions, fetched by name and tested by Spark's evaluation of {@code filters}, are
     * the partitions Spark's call returns, without listing every name again. */
    static InMemoryFileIndex filterPartitions(CatalogFileIndex cat, List<Expression> filters,
                                              SparkSession session, FileStatusCache cache,
                                              List<java.util.Map<String, String>> kept) {
        try {
            long start = System.nanoTime();
            CatalogTable table = cat.table();
            if (table.partitionColumnNames().isEmpty() || filters.isEmpty() || kept == null
                    || kept.size() > MAX_BY_NAME) {
                return null;
            }
            SessionCatalog catalog = Compat.sessionState(session).catalog();
            String tz = Compat.sessionState(session).conf().sessionLocalTimeZone();
            List<String> columns = CollectionConverters.asJava(table.partitionColumnNames());
            org.apache.spark.sql.catalyst.catalog.ExternalCatalog external = catalog.externalCatalog();
            if (table.identifier().database().isEmpty()) {
                return null;
            }
            String db = table.identifier().database().get();
            List<java.util.Map<String, String>> specs = new ArrayList<>();
            for (java.util.Map<String, String> values : kept) {
                java.util.Map<String, String> lower = new java.util.HashMap<>();
                for (java.util.Map.Entry<String, String> e : values.entrySet()) {
                    lower.put(e.getKey().toLowerCase(java.util.Locale.ROOT), e.getValue());
                }
                java.util.Map<String, String> spec = new java.util.LinkedHashMap<>();
                for (String c : columns) {
                    String key = c.toLowerCase(java.util.Locale.ROOT);
                    if (!lower.containsKey(key)) {
                        return null;
                    }
                    String text = lower.get(key);
                    spec.put(c, text == null ? ExternalCatalogUtils.DEFAULT_PARTITION_NAME() : text);
                }
                specs.add(spec);
            }
            org.apache.spark.sql.catalyst.catalog.ExternalCatalog unwrapped =
                external instanceof org.apache.spark.sql.catalyst.catalog.ExternalCatalogWithListener
                    ? ((org.apache.spark.sql.catalyst.catalog.ExternalCatalogWithListener) external)
                        .unwrapped()
                    : external;
            List<CatalogTablePartition> fetched;
            if (unwrapped.getClass().getName().equals(HiveByName.CATALOG)) {
                // a Hive metastore: the raw table once, then each partition once
                fetched = HiveByName.fetch(unwrapped, table, db, specs);
                if (fetched == null) {
                    return null;
                }
            } else {
                // the external catalog itself: the session catalog's getPartition would
                // first ask whether the database and the table exist, each time
                fetched = new ArrayList<>();
                for (java.util.Map<String, String> spec : specs) {
                    fetched.add(external.getPartition(db, table.identifier().table(),
                        toScala(spec)));
                }
            }
            List<CatalogTablePartition> chosen = CollectionConverters.asJava(
                ExternalCatalogUtils.prunePartitionsByFilter(table,
                    CollectionConverters.asScala(fetched).toList(),
                    CollectionConverters.asScala(filters).toList(), tz));
            StructType schema = table.partitionSchema();
            Configuration conf = Compat.sessionState(session).newHadoopConf();
            List<PartitionPath> paths = new ArrayList<>();
            List<Path> roots = new ArrayList<>();
            for (CatalogTablePartition p : chosen) {
                Path path = new Path(p.location());
                FileSystem fs = path.getFileSystem(conf);
                Path qualified = path.makeQualified(fs.getUri(), fs.getWorkingDirectory());
                paths.add(new PartitionPath(p.toRow(schema, tz), qualified));
                roots.add(qualified);
            }
            PartitionSpec spec = new PartitionSpec(schema,
                CollectionConverters.asScala(paths).toList());
            return new InMemoryFileIndex(session, CollectionConverters.asScala(roots).toList(),
                scala.collection.immutable.Map$.MODULE$.empty(), Option.apply(schema), cache,
                Option.apply(spec), Option.apply((Object) (System.nanoTime() - start)));
        } catch (Throwable t) {
            DppFileIndex.LOG.debug("dpp: {} not asked by name ({})", cat, t.toString());
            return null;
        }
    }
}
