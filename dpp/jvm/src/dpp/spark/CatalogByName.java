package dpp.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat;
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
import org.apache.spark.sql.execution.datasources.PartitioningUtils;
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
 * the same evaluation runs on every partition's <em>name</em> (one light call), and only the
 * partitions it keeps are fetched, by name. The set is the one Spark's call returns, the
 * objects the ones it would return; the index built from them is built as Spark builds it
 * (values by {@code CatalogTablePartition.toRow}, paths qualified by their filesystem, the
 * catalog index's own file-status cache).
 */
final class CatalogByName {
    private CatalogByName() {
    }

    /** Past this many partitions kept, one call by filter beats one call per partition. */
    static final int MAX_BY_NAME = 200;

    /** The index Spark's {@code filterPartitions(filters)} would make, or null where this way
     * does not apply (too many partitions kept, anything unexpected: the caller asks Spark's). */
    static InMemoryFileIndex filterPartitions(CatalogFileIndex cat, List<Expression> filters,
                                              SparkSession session, FileStatusCache cache) {
        try {
            long start = System.nanoTime();
            CatalogTable table = cat.table();
            if (table.partitionColumnNames().isEmpty() || filters.isEmpty()) {
                return null;
            }
            SessionCatalog catalog = Compat.sessionState(session).catalog();
            String tz = Compat.sessionState(session).conf().sessionLocalTimeZone();
            List<CatalogTablePartition> named = new ArrayList<>();
            for (String name : CollectionConverters.asJava(
                    catalog.listPartitionNames(table.identifier(), Option.empty()))) {
                named.add(new CatalogTablePartition(PartitioningUtils.parsePathFragment(name),
                    CatalogStorageFormat.empty(), scala.collection.immutable.Map$.MODULE$.empty(),
                    0L, 0L, Option.empty()));
            }
            List<CatalogTablePartition> kept = CollectionConverters.asJava(
                ExternalCatalogUtils.prunePartitionsByFilter(table,
                    CollectionConverters.asScala(named).toList(),
                    CollectionConverters.asScala(filters).toList(), tz));
            if (kept.size() > MAX_BY_NAME) {
                return null;
            }
            StructType schema = table.partitionSchema();
            Configuration conf = Compat.sessionState(session).newHadoopConf();
            List<PartitionPath> paths = new ArrayList<>();
            List<Path> roots = new ArrayList<>();
            for (CatalogTablePartition k : kept) {
                CatalogTablePartition p = catalog.getPartition(table.identifier(), k.spec());
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
