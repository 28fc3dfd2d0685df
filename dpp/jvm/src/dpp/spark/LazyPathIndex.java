package dpp.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Map;
import scala.collection.Seq;

/**
 * A declared path table that is listed only when a scan needs it whole: Spark's reader lists
 * the folder when a DataFrame is made, which a pruned scan must never pay. Queries that dpp
 * prunes never reach {@link #listFiles} here (the {@link DppFileIndex} wrapping it answers);
 * the rest get Spark's own {@code InMemoryFileIndex}, made on first use. The size Spark plans
 * with is the estimate given at declaration (listing it would be the cost this avoids).
 */
public final class LazyPathIndex extends CompatFileIndex {
    private final SparkSession session;
    private final Path root;
    private final Map<String, String> options;
    private final StructType schema;
    private final StructType partitionSchema;
    private final long estimate;
    private volatile InMemoryFileIndex listed;

    LazyPathIndex(SparkSession session, Path root, Map<String, String> options, StructType schema,
                  StructType partitionSchema, long estimate) {
        this.session = session;
        this.root = root;
        this.options = options;
        this.schema = schema;
        this.partitionSchema = partitionSchema;
        this.estimate = estimate;
    }

    public Path root() {
        return root;
    }

    /** The session this table is listed and read by. */
    SparkSession session() {
        return session;
    }

    /**
     * This table as {@code reader} lists and reads it: its own index when {@code reader} is
     * the session it was declared in, else one of {@code reader}'s (same folder, schema and
     * size estimate). A declared table is one relation every session of a driver reads (a
     * Connect server's global temporary view), but its partition values are parsed, and its
     * files listed and read, by the settings of the session the relation names: the reading
     * session's time zone, rebase modes and file handling must govern its query, as they
     * govern {@code spark.read.parquet} of the folder in that session.
     */
    LazyPathIndex in(SparkSession reader) {
        return reader == session ? this
            : new LazyPathIndex(reader, root, options, schema, partitionSchema, estimate);
    }

    private InMemoryFileIndex index() {
        InMemoryFileIndex i = listed;
        if (i == null) {
            synchronized (this) {
                if (listed == null) {
                    List<Path> roots = new ArrayList<>();
                    roots.add(root);
                    listed = new InMemoryFileIndex(session, CollectionConverters.asScala(roots).toList(),
                        options, Option.apply(schema), FileStatusCache.getOrCreate(session),
                        Option.empty(), Option.empty());
                }
                i = listed;
            }
        }
        return i;
    }

    @Override
    List<Path> roots() {
        List<Path> roots = new ArrayList<>();
        roots.add(root);
        return roots;
    }

    @Override
    List<PartitionDirectory> list(Seq<Expression> partitionFilters, Seq<Expression> dataFilters) {
        return CompatFileIndex.listFiles(index(), partitionFilters, dataFilters);
    }

    @Override
    public String[] inputFiles() {
        return index().inputFiles();
    }

    @Override
    public void refresh() {
        InMemoryFileIndex i = listed;
        if (i != null) {
            i.refresh();
        }
    }

    @Override
    public long sizeInBytes() {
        InMemoryFileIndex i = listed;
        return i != null ? i.sizeInBytes() : estimate;
    }

    @Override
    public StructType partitionSchema() {
        return partitionSchema;
    }

    @Override
    public String toString() {
        return "LazyPathIndex[" + root + "]";
    }

    @Override
    public boolean equals(Object o) {
        // the session too: one folder read by two sessions is two relations (each lists and
        // reads by its own settings), and a plan rule's copy bound to another session must
        // not compare equal to the original (Spark's transforms keep the old node then)
        return o instanceof LazyPathIndex && ((LazyPathIndex) o).root.equals(root)
            && ((LazyPathIndex) o).schema.equals(schema)
            && ((LazyPathIndex) o).session == session;
    }

    @Override
    public int hashCode() {
        return root.hashCode();
    }
}
