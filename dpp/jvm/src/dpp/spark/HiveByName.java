package dpp.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalog;
import org.apache.spark.sql.hive.HiveExternalCatalog;
import org.apache.spark.sql.hive.client.HiveClient;
import org.apache.spark.sql.hive.client.RawHiveTable;
import scala.Option;

/**
 * A Hive metastore's partitions by name, the table read once.
 *
 * <p>{@code HiveExternalCatalog.getPartition} asks the metastore three times per partition
 * (the raw table, the partition, the table again to restore the spec's column case), all of
 * it under the catalog's one lock, which every query of the driver needs to be analysed. With
 * a star join keeping a handful of partitions per query, those calls are what many queries
 * at once queue for. Here the raw table is read once and each partition once, through the
 * catalog's own client (itself serialised on the Hive client's state, as the catalog's calls
 * are), and the spec's column names are restored from the {@code CatalogTable} the relation
 * already holds, as the catalog restores them. Kept apart from {@link CatalogByName} so that
 * a Spark without Hive classes never links this class: the caller checks the catalog first.
 */
final class HiveByName {
    private HiveByName() {
    }

    static final String CATALOG = "org.apache.spark.sql.hive.HiveExternalCatalog";

    /** The partitions of {@code specs} (column name to raw text, the default partition's
     * name for NULL, any case), or null when one is missing: the caller then asks Spark's
     * own way, which says what is wrong. */
    static List<CatalogTablePartition> fetch(ExternalCatalog unwrapped, CatalogTable table,
                                             String db, List<Map<String, String>> specs) {
        HiveClient client = ((HiveExternalCatalog) unwrapped).client();
        RawHiveTable raw = client.getRawHiveTable(db, table.identifier().table());
        List<String> columns = CollectionConverters.asJava(table.partitionColumnNames());
        List<CatalogTablePartition> out = new ArrayList<>(specs.size());
        for (Map<String, String> spec : specs) {
            // the metastore keeps partition column names in lower case (the catalog's
            // toMetaStorePartitionSpec)
            scala.collection.immutable.Map<String, String> lower =
                scala.collection.immutable.Map$.MODULE$.empty();
            for (Map.Entry<String, String> e : spec.entrySet()) {
                lower = lower.updated(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
            }
            Option<CatalogTablePartition> found = client.getPartitionOption(raw, lower);
            if (found.isEmpty()) {
                return null;
            }
            CatalogTablePartition p = found.get();
            // the catalog's restorePartitionSpec: each key as the table spells its column
            scala.collection.immutable.Map<String, String> restored =
                scala.collection.immutable.Map$.MODULE$.empty();
            for (Map.Entry<String, String> e : CollectionConverters.asJava(p.spec()).entrySet()) {
                String name = null;
                for (String c : columns) {
                    if (c.equalsIgnoreCase(e.getKey())) {
                        name = c;
                        break;
                    }
                }
                if (name == null) {
                    return null;
                }
                restored = restored.updated(name, e.getValue());
            }
            out.add(p.copy(restored, p.storage(), p.parameters(), p.createTime(),
                p.lastAccessTime(), p.stats()));
        }
        return out;
    }
}
