package dpp.spark;

import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.DynamicPruning;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.FileStatusCache$;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.PartitioningUtils$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.Seq;

/**
 * A declared table's folder as {@code spark.read.parquet(folder)} reads it, listed only where a
 * query needs it.
 *
 * <p>Spark's reader lists every partition folder when the DataFrame is made: a cost that grows
 * with the table, paid by every query of a declared table (which is made afresh for each
 * query). This index is made from the partition folders' <em>names</em> (one listing per
 * partition level, not one per partition) and lists the files of a partition only when a
 * scan asks for it, through Spark's own {@code InMemoryFileIndex} over the folders the scan's
 * partition filters (and dpp's verdicts) keep. What each read returns is Spark's reader's:
 * <ul>
 * <li>the data columns are the schema Spark's reader takes from the first data file in path
 * order (Spark's own reader over the first non-empty folder finds that same file);</li>
 * <li>each partition column's type is the one Spark's inference gives over every non-empty
 * folder. The index is made only when that is certain from the names: every value a plain
 * decimal integer (INT, or BIGINT beyond), a word (STRING), or the NULL partition, and a
 * folder with a value of the widest kind checked to hold data (Spark infers from non-empty
 * folders only). Anything else — a date, a decimal, a fraction, a value that is no name of a
 * folder Spark reads, a file beside the partition folders, a summary file, a column in the
 * files named like a partition column, reader settings that change what is listed — and
 * {@link #open} answers null: Spark's reader is used as it is;</li>
 * <li>partition values are cast from the folder texts by Spark's own
 * {@code castPartValueToDesiredType}, as Spark's reader casts them for the type it
 * inferred;</li>
 * <li>the files of a kept partition are listed by Spark's {@code InMemoryFileIndex} over that
 * folder, with the table's schema given and the table's root as {@code basePath}: its
 * hidden-file rules, file-status cache, values and filters are Spark's.</li>
 * </ul>
 * What it does not see: a folder no query keeps is never looked into, so a malformed folder
 * there (files of another layout, a summary file) does not fail the query as it fails Spark's
 * reader. The size Spark plans with is estimated from the first folder's bytes times the
 * number of partitions.
 */
public final class FolderIndex extends CompatFileIndex {
    static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(FolderIndex.class);
    private static final String DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__";
    /** Folders tried, in path order, for the first data file and for a folder witnessing a
     * column's widest value kind, before the index gives up (Spark's reader is used). */
    private static final int PROBES = 64;
    private static final ThreadLocal<String> WHY = new ThreadLocal<>();

    private final SparkSession session;
    private final Path root;
    private final StructType dataSchema;
    private final StructType partitionSchema;
    private final List<Leaf> leaves;
    private final long size;
    private final ZoneId zone;
    private volatile List<Object[]> typed;   // per leaf: its values, cast by Spark
    // one client of Spark's file-status cache for every listing of this index: a folder is
    // listed once per DataFrame, and a DataFrame run again reads the listing it read before
    private final FileStatusCache statuses;
    private final Named named;   // where the folders' cast values are kept across indexes

    /** One partition folder: its path and the raw text of each partition column. */
    static final class Leaf {
        private final Path parent;
        private final String name;
        final String rel;
        final String[] raw;
        final String order;   // where its files come in Spark's path order: "rel/"
        private Path path;

        Leaf(Path parent, String name, String rel, String[] raw) {
            this.parent = parent;
            this.name = name;
            this.rel = rel;
            this.raw = raw;
            this.order = rel + "/";
        }

        /** Made when asked: a Hadoop path costs microseconds, times every partition. */
        synchronized Path path() {
            if (path == null) {
                path = new Path(parent, name);
            }
            return path;
        }
    }

    private FolderIndex(SparkSession session, Path root, StructType dataSchema,
                        StructType partitionSchema, List<Leaf> leaves, long size, ZoneId zone,
                        Named named) {
        this.session = session;
        this.root = root;
        this.dataSchema = dataSchema;
        this.partitionSchema = partitionSchema;
        this.leaves = leaves;
        this.size = size;
        this.zone = zone;
        this.statuses = FileStatusCache$.MODULE$.getOrCreate(session);
        this.named = named;
    }

    /** Why the last {@link #open} on this thread answered null. */
    public static String why() {
        String w = WHY.get();
        return w == null ? "" : w;
    }

    /**
     * The folder {@code rootText} as a DataFrame whose file index lists kept partitions only,
     * or null (the reason in {@link #why}) where that cannot be proved to read what
     * {@code spark.read.parquet(rootText)} reads — or where the folder holds fewer than
     * {@code minPartitions} partitions (Spark's reader lists those cheaply enough).
     */
    public static Dataset<Row> open(SparkSession session, String rootText, int minPartitions) {
        WHY.remove();
        try {
            return build(session, rootText, minPartitions);
        } catch (Giveup g) {
            WHY.set(g.getMessage());
            return null;
        } catch (Throwable t) {
            WHY.set("failed: " + t);
            LOG.debug("dpp: declared folder {} read by Spark's reader ({})", rootText, t.toString());
            return null;
        }
    }

    private static final class Giveup extends Exception {
        private static final long serialVersionUID = 1L;

        Giveup(String why) {
            super(why, null, false, false);
        }
    }

    private static Dataset<Row> build(SparkSession session, String rootText, int minPartitions)
            throws Exception {
        org.apache.spark.sql.internal.SQLConf conf = Compat.sessionState(session).conf();
        String regex = conf.getConfString("spark.sql.files.ignoredPathSegmentRegex", "^[._]");
        if (!"^[._]".equals(regex)) {
            throw new Giveup("spark.sql.files.ignoredPathSegmentRegex is set");
        }
        if ("true".equalsIgnoreCase(
                conf.getConfString("spark.sql.files.ignoreInvalidPartitionPaths", "false"))) {
            throw new Giveup("spark.sql.files.ignoreInvalidPartitionPaths is set");
        }
        if ("true".equalsIgnoreCase(conf.getConfString("spark.sql.parquet.mergeSchema", "false"))) {
            throw new Giveup("spark.sql.parquet.mergeSchema is set");
        }
        boolean inference = !"false".equalsIgnoreCase(conf.getConfString(
            "spark.sql.sources.partitionColumnTypeInference.enabled", "true"));
        Configuration hadoop = Compat.sessionState(session).newHadoopConf();
        Path given = new Path(rootText);
        FileSystem fs = given.getFileSystem(hadoop);
        Path root = fs.makeQualified(given);
        // the folders as named now: for a local root whose entries are the ones listed
        // before (its modification time stands), the folders read from them before
        java.util.Set<String> timed = timedSchemes(conf.getConfString(FOLDER_TIMES, "hdfs"));
        List<Entry> rootEntries = entries(fs, root, timed);
        Named named = NAMED.get(root.toString());
        if (named == null || named.rootEntries != rootEntries) {
            List<Leaf> found = new ArrayList<>();
            List<String> cols = new ArrayList<>();
            walk(fs, root, rootEntries, "", new ArrayList<>(), cols, found, timed);
            named = new Named(rootEntries, Collections.unmodifiableList(found),
                Collections.unmodifiableList(cols));
            if (cols.size() == 1 && timesFolders(root, timed)) {
                NAMED.put(root.toString(), named);   // one level: the root's entries say all
            }
        }
        List<Leaf> leaves = named.leaves;
        List<String> columns = named.columns;
        if (columns.isEmpty()) {
            throw new Giveup("no partition folders");
        }
        if (leaves.size() < minPartitions) {
            throw new Giveup("fewer than " + minPartitions + " partitions");
        }
        List<Leaf> ordered = named.ordered();

        int n = columns.size();
        DataType[] types = new DataType[n];
        char[] widest = new char[n];
        for (int i = 0; i < n; i++) {
            widest[i] = kindOf(leaves, i, inference);
            types[i] = widest[i] == 'S' ? DataTypes.StringType
                : widest[i] == 'L' ? DataTypes.LongType : DataTypes.IntegerType;
        }

        Map<String, String> options = new HashMap<>();
        options.put("basePath", root.toString());
        scala.collection.immutable.Map<String, String> opts = Compat.toMap(options);
        FileStatusCache cache = FileStatusCache$.MODULE$.getOrCreate(session);

        // the first folder holding a file: Spark's reader takes the schema of its first file
        Leaf first = null;
        long firstBytes = 0;
        List<FileStatus> firstFiles = null;
        Map<Leaf, Boolean> holdsData = new HashMap<>();
        int tried = 0;
        for (Leaf l : ordered) {
            if (tried++ >= PROBES) {
                throw new Giveup("no data file in the first " + PROBES + " folders");
            }
            List<FileStatus> files = new ArrayList<>();
            long[] stat = listed(session, l.path(), opts, cache, files);
            holdsData.put(l, stat[1] > 0);
            if (stat[0] > 0) {
                first = l;
                firstBytes = stat[2];
                firstFiles = files;
                break;
            }
        }
        if (first == null) {
            throw new Giveup("no data file");
        }
        // each column's widest kind must come from a folder Spark infers from (one with data)
        for (int i = 0; i < n; i++) {
            boolean seen = false;
            int probes = 0;
            for (Leaf l : ordered) {
                if (kind(l.raw[i], inference) != widest[i]) {
                    continue;
                }
                Boolean data = holdsData.get(l);
                if (data == null) {
                    if (probes++ >= PROBES) {
                        break;
                    }
                    data = listed(session, l.path(), opts, cache)[1] > 0;
                    holdsData.put(l, data);
                }
                if (data) {
                    seen = true;
                    break;
                }
            }
            if (!seen) {
                throw new Giveup("no folder with data has column " + columns.get(i)
                    + "'s widest value");
            }
        }

        Probed found = probe(session, conf, root, first, firstFiles);
        StructType probed = found.schema;
        for (StructField f : found.dataSchema.fields()) {
            for (String c : columns) {
                if (c.equalsIgnoreCase(f.name())) {
                    throw new Giveup("the files hold a column named like partition column " + c);
                }
            }
        }
        StructField[] fields = probed.fields();
        if (fields.length < n) {
            throw new Giveup("the first folder's reader has fewer columns than partitions");
        }
        List<StructField> data = new ArrayList<>();
        List<StructField> parts = new ArrayList<>();
        for (int k = 0; k < fields.length; k++) {
            int at = k - (fields.length - n);
            if (at < 0) {
                for (String c : columns) {
                    if (c.equalsIgnoreCase(fields[k].name())) {
                        throw new Giveup("the files hold a column named like partition column "
                            + c);
                    }
                }
                data.add(fields[k]);
            } else {
                if (!fields[k].name().equals(columns.get(at))) {
                    throw new Giveup("the reader's partition columns are not the folders'");
                }
                parts.add(new StructField(fields[k].name(), types[at], true, Metadata.empty()));
            }
        }
        StructType dataSchema = new StructType(data.toArray(new StructField[0]));
        StructType partitionSchema = new StructType(parts.toArray(new StructField[0]));
        StructType full = new StructType(concat(data, parts).toArray(new StructField[0]));

        long size = multiply(Math.max(firstBytes, 1L), leaves.size());
        ZoneId zone = ZoneId.of(conf.sessionLocalTimeZone());
        FolderIndex index = new FolderIndex(session, root, dataSchema, partitionSchema,
            leaves, size, zone, named);

        // the relation Spark's reader makes for this folder with the table's schema given,
        // over this index instead of a listing of every folder
        Dataset<Row> shaped = session.read().schema(full).option("basePath", root.toString())
            .parquet(first.path().toString());
        LogicalPlan plan = shaped.queryExecution().analyzed();
        if (!(plan instanceof LogicalRelation)
                || !(((LogicalRelation) plan).relation() instanceof HadoopFsRelation)) {
            throw new Giveup("the reader's plan is not one file relation");
        }
        LogicalRelation lr = (LogicalRelation) plan;
        HadoopFsRelation rel = (HadoopFsRelation) lr.relation();
        if (!rel.schema().equals(full)) {
            throw new Giveup("the reader's schema with the table's schema given differs");
        }
        HadoopFsRelation out = rel.copy(index, partitionSchema, dataSchema, rel.bucketSpec(),
            rel.fileFormat(), rel.options(), rel.sparkSession());
        return Compat.ofRows(session, Compat.withRelation(lr, out));
    }

    /** What Spark's reader of the first data folder gives: its schema (data columns, then
     * the partition columns it inferred) and its relation's data schema. */
    private static final class Probed {
        final StructType schema;
        final StructType dataSchema;

        Probed(StructType schema, StructType dataSchema) {
            this.schema = schema;
            this.dataSchema = dataSchema;
        }
    }

    /** Probes by the first folder's files (path, length, modification time of each), the
     * session's settings and the root: the schema Spark infers is a function of those. */
    private static final Map<String, Probed> PROBED = lru(64);

    /**
     * Spark's reader of the first data folder (with the root as {@code basePath}): its schema
     * comes from a Parquet footer, read by a Spark job. The same files (each one's path,
     * length and modification time, as Spark's own file-status cache trusts them) read
     * under the same settings give the same schema, so a probe is kept for those and a
     * table opened for each query runs that job once. Kept only when every file's last change
     * is older than {@link #QUIET_MS} ({@link #REMOTE_QUIET_MS} off the local disk): a
     * rewrite in the same clock tick would not move the time.
     */
    private static Probed probe(SparkSession session, org.apache.spark.sql.internal.SQLConf conf,
                                Path root, Leaf first, List<FileStatus> files) throws Giveup {
        String key = null;
        if (files != null && !files.isEmpty()) {
            List<FileStatus> sorted = new ArrayList<>(files);
            sorted.sort((a, b) -> a.getPath().toString().compareTo(b.getPath().toString()));
            boolean local = "file".equals(root.toUri().getScheme());
            long quiet = local ? QUIET_MS : REMOTE_QUIET_MS;
            long now = System.currentTimeMillis();
            StringBuilder b = new StringBuilder(root.toString()).append('\u0000')
                .append(first.path()).append('\u0000');
            for (FileStatus f : sorted) {
                if (f.getModificationTime() <= 0 || now - f.getModificationTime() <= quiet) {
                    b = null;
                    break;
                }
                b.append(f.getPath()).append('|').append(f.getLen()).append('|')
                    .append(f.getModificationTime()).append('\u0000');
            }
            if (b != null) {
                b.append(new java.util.TreeMap<>(CollectionConverters.asJava(conf.getAllConfs())));
                key = b.toString();
            }
        }
        Probed held = key == null ? null : PROBED.get(key);
        if (held != null) {
            return held;
        }
        Dataset<Row> probe = session.read().option("basePath", root.toString())
            .parquet(first.path().toString());
        StructType schema = probe.schema();
        LogicalPlan probePlan = probe.queryExecution().analyzed();
        if (!(probePlan instanceof LogicalRelation)
                || !(((LogicalRelation) probePlan).relation() instanceof HadoopFsRelation)) {
            throw new Giveup("the reader's plan is not one file relation");
        }
        Probed made = new Probed(schema,
            ((HadoopFsRelation) ((LogicalRelation) probePlan).relation()).dataSchema());
        if (key != null) {
            PROBED.put(key, made);
        }
        return made;
    }

    private static <T> List<T> concat(List<T> a, List<T> b) {
        List<T> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }

    private static long multiply(long a, long b) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    /** Lists partition folders level by level (names only below the first level that holds
     * no partition folder). Gives up on anything Spark's reader would read otherwise. */
    private static void walk(FileSystem fs, Path dir, List<Entry> listed, String rel,
                             List<String> raws, List<String> columns, List<Leaf> leaves,
                             java.util.Set<String> timed) throws Exception {
        int level = raws.size();
        String column = null;
        List<Entry> subdirs = new ArrayList<>();
        // (the root's entries come listed: on an object store a listing is a request a page)
        for (Entry st : listed != null ? listed : entries(fs, dir, timed)) {
            String name = st.name;
            if (name.startsWith("_metadata") || name.startsWith("_common_metadata")) {
                throw new Giveup("a Parquet summary file at " + st.path());
            }
            if (hidden(name)) {
                continue;
            }
            if (!st.dir) {
                throw new Giveup("a file beside partition folders: " + st.path());
            }
            int eq = name.indexOf('=');
            if (eq <= 0 || eq == name.length() - 1) {
                throw new Giveup("a folder that is no partition: " + st.path());
            }
            String col = name.substring(0, eq);
            if (column == null) {
                column = col;
            } else if (!column.equals(col)) {
                throw new Giveup("partition folders of two columns at " + dir);
            }
            subdirs.add(st);
        }
        if (column == null) {
            if (level == 0) {
                throw new Giveup("no partition folders");
            }
            return;
        }
        if (level < columns.size()) {
            if (!columns.get(level).equals(column)) {
                throw new Giveup("partition folders of two columns at level " + level);
            }
        } else if (level == columns.size() && leaves.isEmpty()) {
            columns.add(column);
        } else {
            throw new Giveup("partition folders at differing depths under " + dir);
        }
        // the depth is set by the first folder: a level whose first folder holds partition
        // folders is listed through; otherwise its folders are the partitions
        boolean deeper;
        if (level + 1 < columns.size()) {
            deeper = true;
        } else if (!leaves.isEmpty()) {
            deeper = false;
        } else {
            deeper = hasPartitionFolders(fs, subdirs.get(0).path(), timed);
        }
        for (Entry st : subdirs) {
            String name = st.name;
            String value = name.substring(name.indexOf('=') + 1);
            List<String> next = new ArrayList<>(raws);
            next.add(value);
            String r = rel.isEmpty() ? name : rel + "/" + name;
            if (deeper) {
                walk(fs, st.path(), null, r, next, columns, leaves, timed);
            } else {
                leaves.add(new Leaf(dir, name, r, next.toArray(new String[0])));
            }
        }
    }

    private static boolean hasPartitionFolders(FileSystem fs, Path dir,
                                               java.util.Set<String> timed) throws Exception {
        for (Entry st : entries(fs, dir, timed)) {
            if (st.dir && !hidden(st.name) && st.name.indexOf('=') > 0) {
                return true;
            }
        }
        return false;
    }

    /** A one-level local folder's partitions as read from its root's entries (reused while
     * those entries are: the query after the one that read them finds them unchanged). */
    static final class Named {
        final List<Entry> rootEntries;
        final List<Leaf> leaves;
        final List<String> columns;
        private List<Leaf> ordered;
        private final Map<String, List<Object[]>> values = new java.util.concurrent.ConcurrentHashMap<>();

        Named(List<Entry> rootEntries, List<Leaf> leaves, List<String> columns) {
            this.rootEntries = rootEntries;
            this.leaves = leaves;
            this.columns = columns;
        }

        /** Spark orders data files by their path text: the folders in order of "rel/". */
        synchronized List<Leaf> ordered() {
            if (ordered == null) {
                List<Leaf> o = new ArrayList<>(leaves);
                o.sort((a, b) -> a.order.compareTo(b.order));
                ordered = Collections.unmodifiableList(o);
            }
            return ordered;
        }
    }

    private static final Map<String, Named> NAMED = lru(16);

    /** A synchronized map of at most {@code most} entries, the least recently used dropped. */
    private static <K, V> Map<K, V> lru(int most) {
        return Collections.synchronizedMap(new java.util.LinkedHashMap<K, V>(16, 0.75f, true) {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
                return size() > most;
            }
        });
    }

    /** A folder's entry: its name, its folder, and whether it is a folder. */
    static final class Entry {
        final String name;
        final Path parent;
        final boolean dir;

        Entry(String name, Path parent, boolean dir) {
            this.name = name;
            this.parent = parent;
            this.dir = dir;
        }

        Path path() {
            return new Path(parent, name);
        }
    }

    /** A folder's entries as listed, and its modification time then. */
    private static final class Listed {
        final long mtime;
        final List<Entry> entries;

        Listed(long mtime, List<Entry> entries) {
            this.mtime = mtime;
            this.entries = entries;
        }
    }

    /** The setting naming the filesystems (URI schemes) besides the local one whose folder
     * modification time changes whenever an entry is added, removed or renamed (HDFS's
     * does; an object store keeps no folder times). */
    static final String FOLDER_TIMES = "spark.dpp.declaredTables.folderTimes";

    static java.util.Set<String> timedSchemes(String text) {
        java.util.Set<String> out = new java.util.HashSet<>();
        out.add("file");
        for (String s : text.split(",")) {
            String t = s.trim().toLowerCase(java.util.Locale.ROOT);
            if (!t.isEmpty()) {
                out.add(t);
            }
        }
        return out;
    }

    static boolean timesFolders(Path dir, java.util.Set<String> timed) {
        String scheme = dir.toUri().getScheme();
        return scheme != null && timed.contains(scheme.toLowerCase(java.util.Locale.ROOT));
    }

    /** Folders' entries, reused while the folder's modification time is the one they were
     * listed under (an entry added, removed or renamed changes it). */
    private static final Map<String, Listed> LOCAL = lru(256);
    /** A local listing is kept only when the folder's last change is this much older than
     * the listing: a change in the same clock tick as the one before would not move the
     * time. */
    private static final long QUIET_MS = 2000;
    /** The same for a remote filesystem's folder, whose time is its server's clock: wide
     * enough for the two clocks to differ. */
    private static final long REMOTE_QUIET_MS = 60_000;

    /**
     * A folder's entries. A local folder ({@code file:}) is read by name through java.nio
     * — Hadoop's local listing reads every entry's status, seconds for 100,000 — and its
     * entries are kept while its modification time stands (one status read per query
     * instead of a listing); so are a folder's on a filesystem named in
     * {@link #FOLDER_TIMES}, through Hadoop. Any other filesystem is listed through Hadoop
     * each time (one request per page on an object store, which keeps no folder times).
     */
    static List<Entry> entries(FileSystem fs, Path dir, java.util.Set<String> timed)
            throws java.io.IOException {
        java.net.URI uri = dir.toUri();
        if (!"file".equals(uri.getScheme())) {
            boolean keep = timesFolders(dir, timed);
            String key = dir.toString();
            long started = System.currentTimeMillis();
            long mtime = keep ? fs.getFileStatus(dir).getModificationTime() : 0L;
            Listed held = mtime > 0 ? LOCAL.get(key) : null;
            if (held != null && held.mtime == mtime) {
                return held.entries;
            }
            List<Entry> out = new ArrayList<>();
            for (FileStatus st : fs.listStatus(dir)) {
                out.add(new Entry(st.getPath().getName(), dir, st.isDirectory()));
            }
            List<Entry> entries = Collections.unmodifiableList(out);
            if (mtime > 0 && started - mtime > REMOTE_QUIET_MS) {
                LOCAL.put(key, new Listed(mtime, entries));
            } else if (keep) {
                LOCAL.remove(key);
            }
            return entries;
        }
        java.nio.file.Path local = java.nio.file.Paths.get(uri.getPath());
        String key = local.toString();
        long started = System.currentTimeMillis();
        long mtime = java.nio.file.Files.getLastModifiedTime(local).toMillis();
        Listed held = LOCAL.get(key);
        if (held != null && held.mtime == mtime) {
            return held.entries;
        }
        List<Entry> out = new ArrayList<>();
        try (java.nio.file.DirectoryStream<java.nio.file.Path> ds =
                 java.nio.file.Files.newDirectoryStream(local)) {
            for (java.nio.file.Path child : ds) {
                String name = child.getFileName().toString();
                out.add(new Entry(name, dir, java.nio.file.Files.isDirectory(child)));
            }
        }
        List<Entry> entries = Collections.unmodifiableList(out);
        if (started - mtime > QUIET_MS) {
            LOCAL.put(key, new Listed(mtime, entries));
        } else {
            LOCAL.remove(key);
        }
        return entries;
    }

    /** Spark's default rule for names its listing skips (hidden names: '_' or '.' first,
     * unless a '_' name holds '=' — a partition folder —, and in-flight copies). */
    static boolean hidden(String name) {
        if (name.endsWith("._COPYING_")) {
            return true;
        }
        return (name.startsWith("_") && !name.contains("=")) || name.startsWith(".");
    }

    /** A raw folder value's kind, as far as it is certain what type Spark infers for it:
     * 'N' the NULL partition, 'I' an INT, 'L' a BIGINT, 'S' a STRING, '?' anything else. */
    static char kind(String raw, boolean inference) {
        if (DEFAULT_PARTITION.equals(raw)) {
            return 'N';
        }
        if (!inference) {
            return 'S';
        }
        int len = raw.length();
        int start = raw.startsWith("-") ? 1 : 0;
        if (len > start && len - start <= 18) {
            boolean digits = true;
            for (int i = start; i < len; i++) {
                char c = raw.charAt(i);
                if (c < '0' || c > '9') {
                    digits = false;
                    break;
                }
            }
            if (digits) {
                long v = Long.parseLong(raw);
                return v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE ? 'I' : 'L';
            }
        }
        char c0 = raw.isEmpty() ? ' ' : raw.charAt(0);
        boolean letter = (c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z');
        // a word: no integer, decimal, fraction, date or timestamp parses from a letter
        // first, but a double's "NaN" and "Infinity" do
        if (letter && !raw.startsWith("NaN") && !raw.startsWith("Infinity")) {
            return 'S';
        }
        return '?';
    }

    /** Column {@code i}'s widest kind over every folder: 'S' over 'L' over 'I'. */
    private static char kindOf(List<Leaf> leaves, int i, boolean inference) throws Giveup {
        boolean anyI = false;
        boolean anyL = false;
        boolean anyS = false;
        for (Leaf l : leaves) {
            char k = kind(l.raw[i], inference);
            if (k == '?') {
                throw new Giveup("a partition value whose type is not certain from its name: "
                    + l.rel);
            }
            anyI |= k == 'I';
            anyL |= k == 'L';
            anyS |= k == 'S';
        }
        if (anyS) {
            return 'S';
        }
        if (anyL) {
            return 'L';
        }
        if (anyI) {
            return 'I';
        }
        throw new Giveup("every value of a partition column is NULL");
    }

    /** Spark's listing of one folder: {files, non-empty data files, bytes}. */
    private static long[] listed(SparkSession session, Path dir,
                                 scala.collection.immutable.Map<String, String> opts,
                                 FileStatusCache cache) {
        return listed(session, dir, opts, cache, null);
    }

    /** As above; {@code statuses}, when given, receives the listed files' statuses. */
    private static long[] listed(SparkSession session, Path dir,
                                 scala.collection.immutable.Map<String, String> opts,
                                 FileStatusCache cache, List<FileStatus> statuses) {
        InMemoryFileIndex idx = new InMemoryFileIndex(session,
            CollectionConverters.asScala(Arrays.asList(dir)).toList(), opts, Option.empty(),
            cache, Option.empty(), Option.empty());
        long files = 0;
        long nonEmpty = 0;
        long bytes = 0;
        for (FileStatus f : CollectionConverters.asJava(idx.allFiles())) {
            if (statuses != null) {
                statuses.add(f);
            }
            files++;
            String name = f.getPath().getName();
            if (f.getLen() > 0 && !name.startsWith("_metadata")
                    && !name.startsWith("_common_metadata")) {
                nonEmpty++;
            }
            bytes += f.getLen();
        }
        return new long[] {files, nonEmpty, bytes};
    }

    // ------------------------------------------------------------------ the index

    public Path root() {
        return root;
    }

    /** The partition folders this index knows, relative to the root, one per line, kept for
     * the split loader under a token ({@code DppHook.takeNames}): the loader judges the
     * folders this index lists, without listing them again. */
    synchronized String namesToken() {
        // one token per index: two scans of one relation (a DataFrame used twice) name the
        // same folders, so their loads may be one; another index's folders, another token
        if (token == null) {
            token = java.util.UUID.randomUUID().toString();
        }
        if (!StaticPruning.holds(token)) {
            StringBuilder b = new StringBuilder(leaves.size() * 16);
            for (int i = 0; i < leaves.size(); i++) {
                if (i > 0) {
                    b.append('\n');
                }
                b.append(leaves.get(i).rel);
            }
            StaticPruning.keepText(token, b);
        }
        return token;
    }

    private String token;   // of this index's folder names (namesToken)

    public int partitions() {
        return leaves.size();
    }

    @Override
    List<Path> roots() {
        return Collections.singletonList(root);
    }

    @Override
    List<PartitionDirectory> list(Seq<Expression> partitionFilters, Seq<Expression> dataFilters) {
        return listWhere(partitionFilters, dataFilters, rel -> false);
    }

    /** The partitions the filters admit and {@code ruledOut} (by folder path relative to the
     * root) does not, listed by Spark's index over their folders. */
    List<PartitionDirectory> listWhere(Seq<Expression> partitionFilters,
                                       Seq<Expression> dataFilters, Predicate<String> ruledOut) {
        List<Path> paths = new ArrayList<>();
        java.util.Set<String> chosen = new java.util.HashSet<>();
        BasePredicate pred = predicate(partitionFilters);
        List<Object[]> values = values();
        for (int i = 0; i < leaves.size(); i++) {
            Leaf l = leaves.get(i);
            if (ruledOut.test(l.rel)) {
                continue;
            }
            if (pred != null && !pred.eval(new GenericInternalRow(values.get(i)))) {
                continue;
            }
            paths.add(l.path());
            chosen.add(l.rel);
        }
        if (paths.isEmpty()) {
            return new ArrayList<>();
        }
        List<PartitionDirectory> listed = shaped(
            CompatFileIndex.listFiles(sub(paths), partitionFilters, dataFilters));
        missing(chosen, listed);
        return listed;
    }

    /**
     * Spark's listing of the kept folders as partitions of this table: a listing of folders
     * that hold no file has no partition columns at all (Spark's index then answers one
     * directory without values, which a scan of this table's columns cannot read: nothing
     * to read, as Spark's reader of the whole folder finds there); a partition of other
     * columns (a kept folder holding another partition level) fails, as Spark's reader of
     * the folder fails on its conflicting partition columns.
     */
    private List<PartitionDirectory> shaped(List<PartitionDirectory> listed) {
        int n = partitionSchema.fields().length;
        List<PartitionDirectory> out = new ArrayList<>(listed.size());
        for (PartitionDirectory pd : listed) {
            if (pd.values().numFields() == n) {
                out.add(pd);
            } else if (!pd.files().isEmpty()) {
                throw new IllegalStateException("conflicting partition folders under " + root
                    + ": a kept folder holds partitions of other columns than "
                    + partitionSchema.simpleString());
            }
        }
        return out;
    }

    /**
     * Fails where a partition folder known when the index was made is gone when its files are
     * listed (Spark's own index skips a missing root path silently): Spark's reader, holding
     * the listing made with the DataFrame, fails reading that folder's files (as when a write
     * replaces the folder a query reads), and so does this — never fewer rows in silence.
     * Under {@code spark.sql.files.ignoreMissingFiles} Spark's reader skips them: so does this.
     */
    private void missing(java.util.Set<String> chosen, List<PartitionDirectory> listed) {
        java.util.Set<String> covered = new java.util.HashSet<>();
        String base = trimmed(root);
        for (PartitionDirectory pd : listed) {
            for (Object o : CollectionConverters.asJava(pd.files())) {
                String p = ((org.apache.spark.sql.execution.datasources.FileStatusWithMetadata) o)
                    .getPath().toUri().getPath();
                if (p.startsWith(base + "/")) {
                    String rel = p.substring(base.length() + 1);
                    int levels = partitionSchema.fields().length;
                    int at = -1;
                    for (int i = 0; i < levels && (at = rel.indexOf('/', at + 1)) >= 0; i++) {
                        if (i == levels - 1) {
                            covered.add(rel.substring(0, at));
                        }
                    }
                }
            }
        }
        org.apache.spark.sql.internal.SQLConf conf = Compat.sessionState(session).conf();
        if ("true".equalsIgnoreCase(conf.getConfString("spark.sql.files.ignoreMissingFiles",
                "false"))) {
            return;
        }
        for (Leaf l : leaves) {
            if (!chosen.contains(l.rel) || covered.contains(l.rel)) {
                continue;
            }
            boolean there;
            try {
                there = l.path().getFileSystem(Compat.sessionState(session).newHadoopConf())
                    .exists(l.path());
            } catch (java.io.IOException e) {
                there = false;
            }
            if (!there) {
                throw new IllegalStateException(new java.io.FileNotFoundException(
                    "partition folder " + l.path() + " of " + root + " no longer exists: it was "
                    + "there when the query's DataFrame was made"));
            }
        }
    }

    private static String trimmed(Path p) {
        String s = p.toUri().getPath();
        while (s.length() > 1 && s.endsWith("/")) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }

    /** Spark's index over these folders (a new one per listing: two scans of one relation
     * may list at once; the index's file-status cache client keeps a folder listed once). */
    private InMemoryFileIndex sub(List<Path> paths) {
        Map<String, String> options = new HashMap<>();
        options.put("basePath", root.toString());
        StructType full = new StructType(concat(Arrays.asList(dataSchema.fields()),
            Arrays.asList(partitionSchema.fields())).toArray(new StructField[0]));
        InMemoryFileIndex idx = new InMemoryFileIndex(listingSession(paths.size()),
            CollectionConverters.asScala(paths).toList(), Compat.toMap(options),
            Option.apply(full), statuses, Option.empty(),
            Option.empty());
        return idx;
    }

    /**
     * The session Spark's index lists {@code folders} kept folders with: this index's own, or,
     * for a table on the local disk that Spark would list with a job (more folders than
     * {@code parallelPartitionDiscovery.threshold}), a clone of it whose threshold is the
     * largest, so Spark's own listing code runs on the driver. A listing job costs a task per
     * folder (1,824 folders: seconds on two cores) where the driver lists local folders in a
     * fraction of that; what is listed, and how, is the same code with the same settings (the
     * clone is made now, holding the session's settings as they are). Any other filesystem
     * keeps Spark's job: there the job lists remote folders in parallel.
     */
    private SparkSession listingSession(int folders) {
        String scheme = root.toUri().getScheme();
        if (scheme != null && !"file".equals(scheme)) {
            return session;
        }
        try {
            org.apache.spark.sql.internal.SQLConf conf = Compat.sessionState(session).conf();
            long threshold = Long.parseLong(
                conf.getConfString(DppFileIndex.THRESHOLD, "32").trim());
            return folders <= threshold ? session : DppFileIndex.listingOnDriver(session);
        } catch (Throwable t) {
            LOG.debug("dpp: {} lists as Spark's session does ({})", root, t.toString());
            return session;
        }
    }

    /** Each folder's values, cast from its texts by Spark's own partition-value cast. */
    private List<Object[]> values() {
        List<Object[]> held = typed;
        if (held != null) {
            return held;
        }
        // the values of INT, BIGINT and STRING folders need no time zone: kept per type
        String key = partitionSchema.json();
        held = named.values.get(key);
        if (held != null) {
            typed = held;
            return held;
        }
        StructField[] fields = partitionSchema.fields();
        List<Object[]> out = new ArrayList<>(leaves.size());
        for (Leaf l : leaves) {
            Object[] row = new Object[fields.length];
            for (int i = 0; i < fields.length; i++) {
                row[i] = PartitioningUtils$.MODULE$.castPartValueToDesiredType(
                    fields[i].dataType(), l.raw[i], zone);
            }
            out.add(row);
        }
        typed = out;
        named.values.put(key, out);
        return out;
    }

    /** The static partition filters as one predicate over this index's partition values
     * (bound by column name), or null: none, or one that cannot be evaluated here (then
     * every folder is listed and Spark's index applies them). */
    private BasePredicate predicate(Seq<Expression> filters) {
        List<Expression> fs = new ArrayList<>();
        for (Expression f : CollectionConverters.asJava(filters)) {
            if (!hasDynamic(f)) {
                fs.add(f);
            }
        }
        if (fs.isEmpty()) {
            return null;
        }
        try {
            return DppFileIndex.partitionPredicate(fs, partitionSchema.fields());
        } catch (Throwable t) {
            LOG.debug("dpp: partition filters of {} not evaluated on folder names ({})", root,
                t.toString());
            return null;
        }
    }

    private static boolean hasDynamic(Expression e) {
        if (e instanceof DynamicPruning) {
            return true;
        }
        for (Expression c : CollectionConverters.asJava(e.children())) {
            if (hasDynamic(c)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public String[] inputFiles() {
        Seq<Expression> none = CollectionConverters.asScala(new ArrayList<Expression>()).toList();
        List<String> names = new ArrayList<>();
        for (PartitionDirectory p : list(none, none)) {
            for (Object f : CollectionConverters.asJava(p.files())) {
                // as Spark's index names them
                names.add(((org.apache.spark.sql.execution.datasources.FileStatusWithMetadata) f)
                    .getPath().toUri().toString());
            }
        }
        return names.toArray(new String[0]);
    }

    @Override
    public void refresh() {
        statuses.invalidateAll();
    }

    @Override
    public long sizeInBytes() {
        return size;
    }

    @Override
    public StructType partitionSchema() {
        return partitionSchema;
    }

    @Override
    public Option<Object> metadataOpsTimeNs() {
        return Option.empty();
    }

    @Override
    public String toString() {
        return "FolderIndex(" + leaves.size() + " partitions)[" + root + "]";
    }

    /** Equal to another over the same folder, as Spark's {@code InMemoryFileIndex} is to
     * another over the same root paths: a DataFrame cached from the table is found by a later
     * query that reads it (and the relations' schemas are compared beside, by Spark). */
    @Override
    public boolean equals(Object o) {
        return o instanceof FolderIndex && root.equals(((FolderIndex) o).root);
    }

    @Override
    public int hashCode() {
        return root.hashCode();
    }
}
