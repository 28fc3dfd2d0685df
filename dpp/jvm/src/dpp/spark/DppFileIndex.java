package dpp.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.Predicate$;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;
import scala.collection.Seq;

/**
 * A file index whose partitions come from dpp's split loader: Spark calls {@link #listFiles}
 * on the driver right before the scan; the loader (in Python) has been waiting on the filter
 * service since the rule fired and answers with the surviving partitions and their files, as
 * it listed them (Spark lists nothing again). Spark's own partition filters (static, and any
 * it passes here) are applied on top, exactly as its own indexes apply them. The size is the
 * base index's, so join selection stays Spark's. Whatever goes wrong — no answer in time, a
 * failed load — the base index lists, as it would have without dpp.
 */
public final class DppFileIndex extends CompatFileIndex {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final SparkSession session;
    private final FileIndex base;
    private final String token;
    private final Function<String, String> bridge;
    private final double timeoutSeconds;
    private volatile List<PartitionDirectory> loaded;   // every kept partition, unfiltered
    // what the loader ruled out, for a base index that holds Spark's own listing: folders
    // (relative paths, any level) and, per kept folder, file names skipped by statistics
    private volatile Set<String> prunedFolders;
    private volatile Map<String, Set<String>> droppedFiles;
    private volatile boolean fellBack;

    DppFileIndex(SparkSession session, FileIndex base, String token,
                 Function<String, String> bridge, double timeoutSeconds) {
        this.session = session;
        this.base = base;
        this.token = token;
        this.bridge = bridge;
        this.timeoutSeconds = timeoutSeconds;
    }

    public FileIndex base() {
        return base;
    }

    public String token() {
        return token;
    }

    @Override
    List<Path> roots() {
        return CollectionConverters.asJava(base.rootPaths());
    }

    @Override
    List<PartitionDirectory> list(Seq<Expression> partitionFilters, Seq<Expression> dataFilters) {
        List<PartitionDirectory> all = load();
        if (all == null) {
            return CompatFileIndex.listFiles(base, partitionFilters, dataFilters);
        }
        if (base instanceof InMemoryFileIndex) {
            // a relation that holds Spark's own listing (spark.read.parquet, a path table):
            // its files, order, reader options (pathGlobFilter, modifiedAfter...), snapshot,
            // partition values and types are Spark's; dpp only takes away what it ruled out
            return subtract(CompatFileIndex.listFiles(base, partitionFilters, dataFilters));
        }
        return prune(all, partitionFilters);
    }

    private List<PartitionDirectory> load() {
        if (loaded != null) {
            return loaded;
        }
        if (fellBack) {
            return null;
        }
        synchronized (this) {
            if (loaded != null || fellBack) {
                return loaded;
            }
            ObjectNode msg = JSON.createObjectNode();
            msg.put("op", "list");
            msg.put("token", token);
            String answer = DppHook.call(bridge, msg.toString(), timeoutSeconds + 30.0);
            try {
                if (answer == null) {
                    fellBack = true;
                    return null;
                }
                JsonNode a = JSON.readTree(answer);
                if (!"ok".equals(a.path("status").asText())) {
                    fellBack = true;
                    return null;
                }
                prunedFolders = new HashSet<>();
                for (JsonNode f : a.path("prunedFolders")) {
                    prunedFolders.add(f.asText());
                }
                droppedFiles = new HashMap<>();
                Iterator<Map.Entry<String, JsonNode>> it = a.path("droppedFiles").fields();
                while (it.hasNext()) {
                    Map.Entry<String, JsonNode> e = it.next();
                    Set<String> names = new HashSet<>();
                    for (JsonNode f : e.getValue()) {
                        names.add(f.asText());
                    }
                    droppedFiles.put(e.getKey(), names);
                }
                loaded = decode(a);
                return loaded;
            } catch (Exception e) {
                fellBack = true;
                return null;
            }
        }
    }

    /** The answer's partitions: each with its partition values as text (null: NULL), cast to
     * the column's type in the session's time zone, as Spark casts a catalog partition's
     * value; and its files with the sizes and times the loader listed. */
    private List<PartitionDirectory> decode(JsonNode a) {
        StructType schema = partitionSchema();
        StructField[] fields = schema.fields();
        String tz = session.sessionState().conf().sessionLocalTimeZone();
        long blockSize = 32L * 1024 * 1024;
        List<PartitionDirectory> out = new ArrayList<>();
        for (JsonNode p : a.path("partitions")) {
            JsonNode values = p.path("values");
            Object[] row = new Object[fields.length];
            for (int i = 0; i < fields.length; i++) {
                JsonNode v = values.get(fields[i].name().toLowerCase());
                if (v == null || v.isNull()) {
                    row[i] = null;
                } else {
                    row[i] = castText(v.asText(), fields[i].dataType(), tz);
                }
            }
            JsonNode files = p.path("files");
            FileStatus[] statuses = new FileStatus[files.size()];
            int k = 0;
            for (JsonNode f : files) {
                statuses[k++] = new FileStatus(f.get(1).asLong(), false, 1, blockSize,
                    f.get(2).asLong(), new Path(f.get(0).asText()));
            }
            out.add(PartitionDirectory.apply(new GenericInternalRow(row), statuses));
        }
        return out;
    }

    /** Spark's own listing less what the loader ruled out. A partition is matched to the
     * loader's verdicts by its folder path relative to the table root; one that does not
     * match (another spelling, a folder the loader never saw) is kept: dpp may fail to skip,
     * never skip what it did not rule out. */
    private List<PartitionDirectory> subtract(List<PartitionDirectory> listed) {
        List<Path> roots = CollectionConverters.asJava(base.rootPaths());
        List<PartitionDirectory> out = new ArrayList<>();
        String root = roots.size() == 1 ? trimmed(roots.get(0)) : null;
        for (PartitionDirectory pd : listed) {
            List<FileStatusWithMetadata> files = CollectionConverters.asJava(pd.files());
            String rel = root == null || files.isEmpty() ? null
                : relative(files.get(0).getPath().getParent(), root);
            if (rel == null) {
                out.add(pd);
                continue;
            }
            if (ruledOut(rel)) {
                continue;
            }
            Set<String> dropped = droppedFiles.get(rel);
            if (dropped == null || dropped.isEmpty()) {
                out.add(pd);
                continue;
            }
            List<FileStatusWithMetadata> kept = new ArrayList<>();
            for (FileStatusWithMetadata f : files) {
                if (!dropped.contains(f.getPath().getName())) {
                    kept.add(f);
                }
            }
            if (!kept.isEmpty()) {
                out.add(pd.copy(pd.values(), CollectionConverters.asScala(kept).toList()));
            }
        }
        return out;
    }

    private boolean ruledOut(String rel) {
        int at = rel.indexOf('/');
        while (true) {
            String prefix = at < 0 ? rel : rel.substring(0, at);
            if (prunedFolders.contains(prefix)) {
                return true;
            }
            if (at < 0) {
                return false;
            }
            at = rel.indexOf('/', at + 1);
        }
    }

    private static String trimmed(Path p) {
        String s = p.toUri().getPath();
        while (s.length() > 1 && s.endsWith("/")) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }

    /** {@code dir} relative to {@code root} as folder names joined by '/' (empty for the root
     * itself: an unpartitioned table's files), or null when it is not below it. */
    private static String relative(Path dir, String root) {
        List<String> names = new ArrayList<>();
        Path cur = dir;
        while (cur != null && !trimmed(cur).equals(root)) {
            names.add(0, cur.getName());
            cur = cur.getParent();
        }
        return cur == null ? null : String.join("/", names);
    }

    /** A partition's folder text as a value of its column's type, cast as Spark casts a
     * catalog partition's value (in the session time zone). */
    static Object castText(String text, org.apache.spark.sql.types.DataType type, String tz) {
        Literal lit = Literal.create(UTF8String.fromString(text), DataTypes.StringType);
        return new Cast(lit, type, Option.apply(tz)).eval(null);
    }

    /** Spark's own partition filters over the kept partitions (what its indexes do in
     * {@code prunePartitions}): bound by column name to the partition schema. */
    private List<PartitionDirectory> prune(List<PartitionDirectory> all, Seq<Expression> filters) {
        List<Expression> fs = CollectionConverters.asJava(filters);
        if (fs.isEmpty()) {
            return all;
        }
        StructField[] fields = partitionSchema().fields();
        Map<String, AttributeReference> byName = new HashMap<>();
        for (Expression f : fs) {
            for (Attribute a : CollectionConverters.asJava(f.references().toSeq())) {
                if (a instanceof AttributeReference) {
                    byName.put(a.name().toLowerCase(), (AttributeReference) a);
                }
            }
        }
        List<Attribute> input = new ArrayList<>();
        for (StructField f : fields) {
            AttributeReference a = byName.get(f.name().toLowerCase());
            if (a == null) {
                a = new AttributeReference(f.name(), f.dataType(), true, Metadata.empty(),
                    NamedExpression$.MODULE$.newExprId(),
                    CollectionConverters.asScala(new ArrayList<String>()).toList());
            }
            input.add(a);
        }
        Expression cond = fs.get(0);
        for (int i = 1; i < fs.size(); i++) {
            cond = new And(cond, fs.get(i));
        }
        BasePredicate pred = Predicate$.MODULE$.create(cond,
            CollectionConverters.asScala(input).toList());
        pred.initialize(0);
        List<PartitionDirectory> kept = new ArrayList<>();
        for (PartitionDirectory p : all) {
            if (pred.eval(p.values())) {
                kept.add(p);
            }
        }
        return kept;
    }

    @Override
    public String[] inputFiles() {
        List<PartitionDirectory> all = loaded;
        if (all == null) {
            return base.inputFiles();
        }
        if (base instanceof InMemoryFileIndex) {
            Seq<Expression> none =
                CollectionConverters.asScala(new ArrayList<Expression>()).toList();
            all = subtract(CompatFileIndex.listFiles(base, none, none));
        }
        List<String> names = new ArrayList<>();
        for (PartitionDirectory p : all) {
            for (Object f : CollectionConverters.asJava(p.files())) {
                names.add(((org.apache.spark.sql.execution.datasources.FileStatusWithMetadata) f)
                    .getPath().toString());
            }
        }
        return names.toArray(new String[0]);
    }

    @Override
    public void refresh() {
        base.refresh();
    }

    @Override
    public long sizeInBytes() {
        return base.sizeInBytes();
    }

    @Override
    public StructType partitionSchema() {
        return base.partitionSchema();
    }

    @Override
    public Option<Object> metadataOpsTimeNs() {
        return base.metadataOpsTimeNs();
    }

    @Override
    public String toString() {
        return "Dpp" + base.toString();
    }

    /** Equal for the same load's answers (one token for every copy of a relation pruned the
     * same way): Spark's exchange and subquery reuse then see a CTE inlined twice as one
     * scan, as without dpp. */
    @Override
    public boolean equals(Object o) {
        return o instanceof DppFileIndex && ((DppFileIndex) o).token.equals(token);
    }

    @Override
    public int hashCode() {
        return token.hashCode();
    }
}
