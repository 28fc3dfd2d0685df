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
import org.apache.spark.sql.catalyst.expressions.CreateNamedStruct;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.Predicate$;
import org.apache.spark.sql.execution.datasources.CatalogFileIndex;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.CharType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.types.VarcharType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;
import scala.collection.Seq;

/**
 * A file index over a relation dpp prunes. Spark calls {@link #listFiles} on the driver right
 * before the scan; the split loader (in Python) has been waiting on the filter service since
 * the rule fired and answers what survived. Spark defines the relation, dpp only removes:
 * <ul>
 * <li>a base that holds Spark's own listing ({@code InMemoryFileIndex}: spark.read.parquet, a
 * path table) lists as always, less the folders and files the loader ruled out;</li>
 * <li>a catalog table ({@code CatalogFileIndex}) is listed by Spark's own catalog index, with
 * the kept partitions added to its partition filters as a predicate on the partition values
 * Spark reads from the catalog (its metastore filter, partition locations, value typing,
 * file status cache and file handling stay Spark's), less the files the loader skipped by
 * statistics or buckets.</li>
 * </ul>
 * The size is the base index's, so join selection stays Spark's. Whatever goes wrong — no
 * answer in time, a failed load, a predicate Spark cannot take — the base index lists, as it
 * would have without dpp.
 */
public final class DppFileIndex extends CompatFileIndex {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final org.slf4j.Logger LOG =
        org.slf4j.LoggerFactory.getLogger(DppFileIndex.class);
    private static final String DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__";
    // most kept values of one column a metastore is asked for one by one (a longer OR chain
    // of equalities fails on some metastores); beyond, their range
    private static final int IN_LIMIT = 32;

    private final SparkSession session;
    private final FileIndex base;
    private final String token;
    private final Function<String, String> bridge;
    private final double timeoutSeconds;
    // what dpp prunes the relation by, as Spark's scan description shows it (null: nothing)
    private final String pruning;
    private final List<Path> roots;   // the base's, the first described by ``pruning``
    private volatile List<PartitionDirectory> loaded;   // every kept partition, unfiltered
    // what the loader ruled out, for a base index that holds Spark's own listing: folders
    // (relative paths, any level) and, per kept folder, file names skipped by statistics
    private volatile Set<String> prunedFolders;
    // for a base that knows its partition folders by name (FolderIndex), the loader's kept
    // ones: every other is ruled out (null: prunedFolders says what is)
    private volatile Set<String> keptFolders;
    private volatile Map<String, Set<String>> droppedFiles;
    // for a catalog table: the kept partitions' catalog values (column -> raw text, null for
    // the default partition; null: every partition kept), and the files skipped, by path
    private volatile List<Map<String, String>> keptSpecs;
    private volatile Map<String, long[]> droppedPaths;
    private volatile boolean fellBack;

    DppFileIndex(SparkSession session, FileIndex base, String token,
                 Function<String, String> bridge, double timeoutSeconds, String pruning) {
        this.session = session;
        this.base = base;
        this.token = token;
        this.bridge = bridge;
        this.timeoutSeconds = timeoutSeconds;
        this.pruning = pruning == null || pruning.isEmpty() ? null : pruning;
        this.roots = described(CollectionConverters.asJava(base.rootPaths()), this.pruning);
    }

    public FileIndex base() {
        return base;
    }

    public String token() {
        return token;
    }

    /** The base's root paths, the first described: Spark writes a scan's Location (in
     * {@code explain()}, the SQL tab and a Connect client's plan) as the index's class name and
     * its roots' texts, and nothing else of an index, so that is where what dpp prunes the
     * relation by can be read by someone without the driver's reports. */
    @Override
    List<Path> roots() {
        return roots;
    }

    private static List<Path> described(List<Path> roots, String pruning) {
        if (pruning == null || roots.isEmpty()) {
            return roots;
        }
        List<Path> out = new ArrayList<>(roots);
        out.set(0, new DescribedPath(roots.get(0), "dpp: " + pruning));
        return out;
    }

    /** What the scan's description says dpp prunes the relation by, or null. */
    public String pruning() {
        return pruning;
    }

    /**
     * A root path whose text starts with what dpp prunes by ({@code dpp: ss_sold_date_sk IN
     * date_dim.d_date_sk | file:/…}), in front so Spark's abbreviation of a long Location
     * keeps it. Everything else of it is its root's: equality, hash and order are the URI's
     * (Spark's check that a write does not overwrite what it reads compares paths), and a
     * qualified copy or a path built on it is a plain {@code Path}.
     */
    static final class DescribedPath extends Path {
        private static final long serialVersionUID = 1L;
        private final String label;

        DescribedPath(Path root, String label) {
            super(root.toUri());
            this.label = label;
        }

        @Override
        public Path makeQualified(java.net.URI defaultUri, Path workingDir) {
            return new Path(toUri()).makeQualified(defaultUri, workingDir);
        }

        @Override
        public String toString() {
            return label + " | " + super.toString();
        }
    }

    @Override
    List<PartitionDirectory> list(Seq<Expression> partitionFilters, Seq<Expression> dataFilters) {
        List<PartitionDirectory> all = load();
        if (all == null) {
            return CompatFileIndex.listFiles(base, partitionFilters, dataFilters);
        }
        if (base instanceof FolderIndex) {
            // a declared folder listed where a scan needs it: the folders the loader ruled
            // out are never listed, the rest as Spark's index over them lists them
            return subtract(((FolderIndex) base).listWhere(partitionFilters, dataFilters,
                this::ruledOut));
        }
        if (base instanceof InMemoryFileIndex) {
            // a relation that holds Spark's own listing (spark.read.parquet, a path table):
            // its files, order, reader options (pathGlobFilter, modifiedAfter...), snapshot,
            // partition values and types are Spark's; dpp only takes away what it ruled out
            return subtract(CompatFileIndex.listFiles(base, partitionFilters, dataFilters));
        }
        if (base instanceof CatalogFileIndex) {
            return listCatalog(partitionFilters, dataFilters);
        }
        return prune(all, partitionFilters);
    }

    /** Spark's catalog index listing the partitions its filters and dpp's kept partitions
     * admit, less the files the loader skipped; on any failure Spark's unpruned answer (a
     * failure means no pruning, never a failed query or fewer rows). */
    private List<PartitionDirectory> listCatalog(Seq<Expression> partitionFilters,
                                                 Seq<Expression> dataFilters) {
        List<Expression> restriction;
        try {
            restriction = keptPredicate();
        } catch (Throwable t) {
            LOG.warn("dpp: the kept partitions of {} cannot be put as a predicate ({}); the "
                + "table is read unpruned", base, t.toString());
            return CompatFileIndex.listFiles(base, partitionFilters, dataFilters);
        }
        if (restriction == null) {   // no partition kept: nothing of the relation is read
            return new ArrayList<>();
        }
        List<PartitionDirectory> listed;
        try {
            List<Expression> filters =
                new ArrayList<>(CollectionConverters.asJava(partitionFilters));
            filters.addAll(restriction);
            FileIndex target = onDriver((CatalogFileIndex) base);
            org.apache.spark.sql.execution.datasources.InMemoryFileIndex byName =
                target instanceof CatalogFileIndex ? CatalogByName.filterPartitions(
                    (CatalogFileIndex) target, filters, sessionOf((CatalogFileIndex) target),
                    statusCacheOf((CatalogFileIndex) target), keptSpecs) : null;
            listed = byName != null
                ? CompatFileIndex.listFiles(byName, CollectionConverters.asScala(
                    new ArrayList<Expression>()).toList(), dataFilters)
                : CompatFileIndex.listFiles(target, CollectionConverters.asScala(filters).toList(),
                    dataFilters);
        } catch (Throwable t) {
            LOG.warn("dpp: Spark's catalog index did not take the kept partitions of {} as a "
                + "predicate ({}); the table is read unpruned", base, t.toString());
            return CompatFileIndex.listFiles(base, partitionFilters, dataFilters);
        }
        return dropPaths(listed);
    }

    /**
     * The catalog index itself, or, for a table in local folders, a copy of it that lists on
     * the driver: Spark lists more than {@code parallelPartitionDiscovery.threshold} partition
     * folders with a Spark job, whose round trip costs far more than listing local folders
     * (what a kept-partition listing of a few dozen days pays). The copy is Spark's own
     * {@code CatalogFileIndex} over the same table in a clone of the table's session (every
     * setting as that session's, the threshold aside) and holds the original's client of
     * Spark's file-status cache, so a listing Spark cached for the table is the one it reads.
     * Anything unexpected: the index as it is.
     */
    static FileIndex onDriver(CatalogFileIndex cat) {
        try {
            List<Path> roots = CollectionConverters.asJava(cat.rootPaths());
            if (roots.isEmpty()) {
                return cat;
            }
            for (Path root : roots) {
                String scheme = root.toUri().getScheme();
                if (scheme != null && !"file".equals(scheme)) {
                    return cat;
                }
            }
            if (!listsWithJob(cat)) {
                return cat;   // a copy already, or a session that never lists with a job
            }
            java.lang.reflect.Field cacheField = CatalogFileIndex.class.getDeclaredField("fileStatusCache");
            cacheField.setAccessible(true);
            SparkSession clone = listingOnDriver(sessionOf(cat));
            java.lang.reflect.Constructor<?> make = null;
            for (java.lang.reflect.Constructor<?> c : CatalogFileIndex.class.getConstructors()) {
                if (c.getParameterCount() == 3) {
                    make = c;
                }
            }
            if (make == null) {
                return cat;
            }
            CatalogFileIndex copy = (CatalogFileIndex) make.newInstance(clone, cat.table(),
                cat.sizeInBytes());
            cacheField.set(copy, cacheField.get(cat));
            return copy;
        } catch (Throwable t) {
            LOG.debug("dpp: the catalog index of {} lists as it is ({})", cat, t.toString());
            return cat;
        }
    }

    static final String THRESHOLD =
        "spark.sql.sources.parallelPartitionDiscovery.threshold";

    /** A clone of {@code session} (every setting as its own, made now) whose listing
     * threshold is the largest: Spark's index lists any number of folders on the driver. */
    static SparkSession listingOnDriver(SparkSession session) {
        SparkSession clone = Compat.cloneSession(session);
        Compat.sessionState(clone).conf().setConfString(THRESHOLD,
            String.valueOf(Integer.MAX_VALUE));
        return clone;
    }

    private static org.apache.spark.sql.execution.datasources.FileStatusCache statusCacheOf(
            CatalogFileIndex cat) throws ReflectiveOperationException {
        java.lang.reflect.Field f = CatalogFileIndex.class.getDeclaredField("fileStatusCache");
        f.setAccessible(true);
        return (org.apache.spark.sql.execution.datasources.FileStatusCache) f.get(cat);
    }

    private static SparkSession sessionOf(CatalogFileIndex cat) throws ReflectiveOperationException {
        java.lang.reflect.Field f = CatalogFileIndex.class.getDeclaredField("sparkSession");
        f.setAccessible(true);
        return (SparkSession) f.get(cat);
    }

    /** Whether {@code index} is a catalog index whose session may list its partition folders
     * with a Spark job: false for a copy made by {@link #onDriver} (its threshold is the
     * largest), anything else, or anything unexpected. */
    static boolean listsWithJob(FileIndex index) {
        if (!(index instanceof CatalogFileIndex)) {
            return false;
        }
        try {
            String t = Compat.sessionState(sessionOf((CatalogFileIndex) index)).conf()
                .getConfString(THRESHOLD, "32");
            return Long.parseLong(t.trim()) < Integer.MAX_VALUE;
        } catch (Throwable t) {
            return false;
        }
    }

    /** The kept partitions as partition filters for Spark's catalog index: empty when every
     * partition was kept, null when none was.
     *
     * <p>Spark reads a catalog partition's value by casting the catalog's raw text to the
     * column's type in the session time zone ({@code CatalogTablePartition.toRow}); each kept
     * partition's literal is made from that same raw text by the same cast, so a kept
     * partition always passes. The exact test is one set membership of the struct of the
     * partition values (which a metastore cannot evaluate: Spark then tests it on the
     * partitions the metastore returns); for the metastore, per column, the kept values (or
     * their range, beyond {@link #IN_LIMIT} of them) or NULL. A TIMESTAMP column's value may
     * be read in a partition's own time zone property: it is constrained only by the range of
     * its kept values widened by a day on each side, never by an exact value. */
    private List<Expression> keptPredicate() {
        List<Map<String, String>> specs = keptSpecs;
        List<Expression> out = new ArrayList<>();
        if (specs == null) {
            return out;
        }
        if (specs.isEmpty()) {
            return null;
        }
        StructField[] fields = partitionSchema().fields();
        String tz = session.sessionState().conf().sessionLocalTimeZone();
        int n = fields.length;
        AttributeReference[] attrs = new AttributeReference[n];
        DataType[] types = new DataType[n];
        for (int i = 0; i < n; i++) {
            types[i] = plainType(fields[i].dataType());
            attrs[i] = new AttributeReference(fields[i].name(), types[i], true, Metadata.empty(),
                NamedExpression$.MODULE$.newExprId(),
                CollectionConverters.asScala(new ArrayList<String>()).toList());
        }
        List<Object[]> rows = new ArrayList<>();
        for (Map<String, String> spec : specs) {
            Map<String, String> lower = new HashMap<>();
            for (Map.Entry<String, String> e : spec.entrySet()) {
                lower.put(e.getKey().toLowerCase(), e.getValue());
            }
            Object[] row = new Object[n];
            for (int i = 0; i < n; i++) {
                String key = fields[i].name().toLowerCase();
                if (!lower.containsKey(key)) {
                    throw new IllegalArgumentException("a kept partition without a value of "
                        + fields[i].name());
                }
                String text = lower.get(key);
                row[i] = text == null || DEFAULT_PARTITION.equals(text)
                    ? null : castText(text, types[i], tz);
            }
            rows.add(row);
        }
        List<Integer> exact = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (types[i] instanceof TimestampType) {
                out.add(widened(attrs[i], rows, i));
            } else {
                exact.add(i);
                out.add(columnTerm(attrs[i], rows, i));
            }
        }
        if (!exact.isEmpty()) {
            List<Expression> parts = new ArrayList<>();
            for (int i : exact) {
                parts.add(Literal.create(fields[i].name(), DataTypes.StringType));
                parts.add(attrs[i]);
            }
            CreateNamedStruct struct = new CreateNamedStruct(
                CollectionConverters.asScala(parts).toList());
            List<Object> values = new ArrayList<>();
            for (Object[] row : rows) {
                Object[] sub = new Object[exact.size()];
                for (int k = 0; k < sub.length; k++) {
                    sub[k] = row[exact.get(k)];
                }
                values.add(new GenericInternalRow(sub));
            }
            out.add(new InSet(struct, CollectionConverters.asScala(values).toSet()));
        }
        return out;
    }

    /** Column {@code i}'s kept values: {@code IN} (a range beyond {@link #IN_LIMIT}), or
     * NULL where the default partition was kept. */
    private static Expression columnTerm(AttributeReference a, List<Object[]> rows, int i) {
        List<Object> values = new ArrayList<>();
        Set<Object> seen = new HashSet<>();
        boolean nulls = false;
        for (Object[] row : rows) {
            if (row[i] == null) {
                nulls = true;
            } else if (seen.add(row[i])) {
                values.add(row[i]);
            }
        }
        Expression term = null;
        if (!values.isEmpty() && values.size() <= IN_LIMIT) {
            List<Expression> lits = new ArrayList<>();
            for (Object v : values) {
                lits.add(new Literal(v, a.dataType()));
            }
            term = new In(a, CollectionConverters.asScala(lits).toList());
        } else if (!values.isEmpty()) {
            term = range(a, values, null);
        }
        if (nulls) {
            term = term == null ? new IsNull(a) : new Or(term, new IsNull(a));
        }
        return term;
    }

    /** A TIMESTAMP column's kept values as a range a day wider on each side (any partition's
     * own time zone shifts its value by less), or NULL. */
    private static Expression widened(AttributeReference a, List<Object[]> rows, int i) {
        List<Object> values = new ArrayList<>();
        boolean nulls = false;
        for (Object[] row : rows) {
            if (row[i] == null) {
                nulls = true;
            } else {
                values.add(row[i]);
            }
        }
        Expression term = values.isEmpty() ? null : range(a, values, 86_400_000_000L);
        if (nulls) {
            term = term == null ? new IsNull(a) : new Or(term, new IsNull(a));
        }
        return term;
    }

    private static Expression range(AttributeReference a, List<Object> values, Long widen) {
        Object lo = values.get(0);
        Object hi = values.get(0);
        for (Object v : values) {
            if (less(v, lo, a.dataType())) {
                lo = v;
            }
            if (less(hi, v, a.dataType())) {
                hi = v;
            }
        }
        if (widen != null) {
            lo = (Long) lo - widen;
            hi = (Long) hi + widen;
        }
        return new And(new GreaterThanOrEqual(a, new Literal(lo, a.dataType())),
            new LessThanOrEqual(a, new Literal(hi, a.dataType())));
    }

    private static boolean less(Object x, Object y, DataType type) {
        return Boolean.TRUE.equals(new LessThan(new Literal(x, type), new Literal(y, type))
            .eval(null));
    }

    /** The type Spark's catalog reads a partition value as: CHAR and VARCHAR as STRING
     * ({@code CharVarcharUtils.replaceCharVarcharWithStringInSchema}). */
    private static DataType plainType(DataType t) {
        return t instanceof CharType || t instanceof VarcharType ? DataTypes.StringType : t;
    }

    /** Spark's listing less the files the loader skipped (statistics, buckets): a file is
     * dropped only when Spark lists it under the same path with the same size and time the
     * loader read, so a file rewritten since is read. */
    private List<PartitionDirectory> dropPaths(List<PartitionDirectory> listed) {
        Map<String, long[]> dropped = droppedPaths;
        if (dropped == null || dropped.isEmpty()) {
            return listed;
        }
        List<PartitionDirectory> out = new ArrayList<>();
        for (PartitionDirectory pd : listed) {
            List<FileStatusWithMetadata> files = CollectionConverters.asJava(pd.files());
            List<FileStatusWithMetadata> kept = new ArrayList<>();
            for (FileStatusWithMetadata f : files) {
                long[] seen = dropped.get(pathKey(f.getPath()));
                if (seen == null || seen[0] != f.getLen()
                        || (seen[1] > 0 && seen[1] != f.getModificationTime())) {
                    kept.add(f);
                }
            }
            if (kept.size() == files.size()) {
                out.add(pd);
            } else if (!kept.isEmpty()) {
                out.add(pd.copy(pd.values(), CollectionConverters.asScala(kept).toList()));
            }
        }
        return out;
    }

    /** A file's path as scheme, authority and decoded path (a local file: {@code file:}). */
    static String pathKey(Path p) {
        java.net.URI u = p.toUri();
        String scheme = u.getScheme() == null ? "file" : u.getScheme();
        String auth = u.getAuthority() == null ? "" : u.getAuthority();
        return scheme + "://" + auth + u.getPath();
    }

    /** With {@code spark.dpp.sparkKeys.enabled} (on unless set {@code false}, the default of
     * Python's DppConfig): the keys Spark's own dynamic pruning resolved for the scan listing
     * this index ({@link SparkKeys}), for the build sides dpp left to them; never fails the
     * listing. */
    private void sparkKeysInto(ObjectNode msg) {
        try {
            String on = session.conf().get("spark.dpp.sparkKeys.enabled", "true")
                .trim().toLowerCase(java.util.Locale.ROOT);
            if (on.equals("false") || on.equals("0") || on.equals("no") || on.equals("off")) {
                return;   // DppConfig's false spellings
            }
            List<String> columns = new ArrayList<>();
            for (org.apache.spark.sql.types.StructField f : base.partitionSchema().fields()) {
                columns.add(f.name());
            }
            ObjectNode keys = SparkKeys.of(session, this, columns);
            if (keys != null) {
                msg.set("sparkKeys", keys);
            }
        } catch (Throwable t) {
            LOG.debug("dpp: Spark's keys for {} not read ({})", token, t.toString());
        }
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
            // the action this listing runs for, as PySpark names it (a plan made by an explain
            // is named by it); Spark's own fallback would name this frame, never the user's
            String site = session.sparkContext().getLocalProperty("callSite.short");
            if (site != null && !site.isEmpty()) {
                msg.put("callSite", site);
            }
            sparkKeysInto(msg);
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
                String bad = malformed(a, base instanceof CatalogFileIndex);
                if (bad != null) {
                    // an answer that lost a field would read as "nothing kept": Spark's own
                    // listing instead (Python checks the same contract before it answers)
                    LOG.warn("dpp: the answer for {} breaks the list wire contract ({}); "
                        + "Spark's own listing is read", base, bad);
                    fellBack = true;
                    return null;
                }
                prunedFolders = new HashSet<>();
                for (JsonNode f : a.path("prunedFolders")) {
                    prunedFolders.add(f.asText());
                }
                if (a.has("keptFolders")) {
                    if (!(base instanceof FolderIndex)) {
                        // kept folders speak only for the folders the index knows
                        LOG.warn("dpp: the answer for {} names kept folders of an index that "
                            + "does not know its folders; Spark's own listing is read", base);
                        fellBack = true;
                        return null;
                    }
                    Set<String> kept = new HashSet<>();
                    for (JsonNode f : a.path("keptFolders")) {
                        kept.add(f.asText());
                    }
                    keptFolders = kept;
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
                if (base instanceof CatalogFileIndex) {
                    readCatalog(a.path("catalog"));
                    loaded = new ArrayList<>();
                } else {
                    loaded = decode(a);
                }
                return loaded;
            } catch (Exception e) {
                fellBack = true;
                return null;
            }
        }
    }

    /**
     * Why {@code a} is not a list answer of this wire version (the schema's {@code
     * listAnswer}, {@link WireCheck}: Python checks the same before it answers), or a catalog
     * index's answer without its catalog part, a folder index's without its partitions; or
     * null.
     */
    public static String malformedAnswer(String json, boolean catalog) {
        try {
            return malformed(JSON.readTree(json), catalog);
        } catch (Exception e) {
            return "not JSON: " + e.getMessage();
        }
    }

    static String malformed(JsonNode a, boolean catalog) {
        if (!a.path("version").isInt() || a.path("version").asInt() != WireCheck.VERSION) {
            return "version " + a.path("version") + ", expected " + WireCheck.VERSION;
        }
        String bad = WireCheck.problem("listAnswer", a);
        if (bad != null) {
            return bad;
        }
        if (!"ok".equals(a.path("status").asText())) {
            return null;
        }
        if (catalog != a.has("catalog")) {
            return catalog ? "a catalog table's answer has no catalog part"
                : "a folder listing's answer has no partitions";
        }
        return null;
    }

    /** A catalog table's answer: the kept partitions' raw values (absent or null: every
     * partition kept) and the skipped files as [path, bytes, mtime ms]. */
    private void readCatalog(JsonNode c) {
        if (c.isMissingNode() || c.isNull()) {
            throw new IllegalArgumentException("no catalog answer");
        }
        JsonNode kept = c.path("kept");
        if (kept.isArray()) {
            List<Map<String, String>> specs = new ArrayList<>();
            for (JsonNode p : kept) {
                Map<String, String> spec = new HashMap<>();
                Iterator<Map.Entry<String, JsonNode>> it = p.fields();
                while (it.hasNext()) {
                    Map.Entry<String, JsonNode> e = it.next();
                    spec.put(e.getKey(), e.getValue().isNull() ? null : e.getValue().asText());
                }
                specs.add(spec);
            }
            keptSpecs = specs;
        } else {
            keptSpecs = null;
        }
        Map<String, long[]> dropped = new HashMap<>();
        for (JsonNode f : c.path("dropped")) {
            dropped.put(pathKey(new Path(f.get(0).asText())),
                new long[] {f.get(1).asLong(), f.get(2).asLong()});
        }
        droppedPaths = dropped;
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
        Set<String> kept = keptFolders;
        if (kept != null) {
            int cut = rel.indexOf('/');
            while (true) {
                if (kept.contains(cut < 0 ? rel : rel.substring(0, cut))) {
                    return false;
                }
                if (cut < 0) {
                    return true;
                }
                cut = rel.indexOf('/', cut + 1);
            }
        }
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
        BasePredicate pred = partitionPredicate(fs, partitionSchema().fields());
        List<PartitionDirectory> kept = new ArrayList<>();
        for (PartitionDirectory p : all) {
            if (pred.eval(p.values())) {
                kept.add(p);
            }
        }
        return kept;
    }

    /** Partition filters as one predicate over a row of partition values in {@code fields}'
     * order, each column bound by name (any case) to the filters' attribute of that name. */
    static BasePredicate partitionPredicate(List<Expression> fs, StructField[] fields) {
        Map<String, AttributeReference> byName = new HashMap<>();
        for (Expression f : fs) {
            for (Attribute a : CollectionConverters.asJava(f.references().toSeq())) {
                if (a instanceof AttributeReference) {
                    byName.put(a.name().toLowerCase(java.util.Locale.ROOT),
                        (AttributeReference) a);
                }
            }
        }
        List<Attribute> input = new ArrayList<>();
        for (StructField f : fields) {
            AttributeReference a = byName.get(f.name().toLowerCase(java.util.Locale.ROOT));
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
        return pred;
    }

    @Override
    public String[] inputFiles() {
        List<PartitionDirectory> all = loaded;
        if (all == null) {
            return base.inputFiles();
        }
        Seq<Expression> none =
            CollectionConverters.asScala(new ArrayList<Expression>()).toList();
        if (base instanceof FolderIndex) {
            all = subtract(((FolderIndex) base).listWhere(none, none, this::ruledOut));
        } else if (base instanceof InMemoryFileIndex) {
            all = subtract(CompatFileIndex.listFiles(base, none, none));
        } else if (base instanceof CatalogFileIndex) {
            all = listCatalog(none, none);
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
