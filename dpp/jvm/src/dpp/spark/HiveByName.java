package dpp.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalog;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.execution.datasources.PartitioningUtils;
import org.apache.spark.sql.hive.HiveExternalCatalog;
import org.apache.spark.sql.hive.client.HiveClient;
import org.apache.spark.sql.hive.client.RawHiveTable;
import scala.Option;

/**
 * A Hive metastore's partitions by name, the table read once and the partitions in one call.
 *
 * <p>{@code HiveExternalCatalog.getPartition} asks the metastore three times per partition
 * (the raw table, the partition, the table again to restore the spec's column case), all of
 * it under the catalog's one lock, which every query of the driver needs to be analysed. With
 * a star join keeping a handful of partitions per query, those calls are what many queries
 * at once queue for. Here the raw table is read once and the kept partitions in one
 * metastore call ({@code Hive.getPartitionsByNames}, the call Spark's own
 * {@code prunePartitionsFastFallback} makes; a single {@code getPartition} is a query of its
 * own, as costly on the metastore as listing every partition of a thousand), through the
 * catalog's own client and inside its {@code withHiveState}, as the client's own calls run
 * (serialised on the client's state). The objects are made by the client's own
 * {@code fromHivePartition}, and the spec's column names are restored from the
 * {@code CatalogTable} the relation already holds, as the catalog restores them. Anything
 * unexpected in that call (a client of another shape, a partition it does not return): one
 * {@code getPartitionOption} per partition, as before. Kept apart from {@link CatalogByName}
 * so that a Spark without Hive classes never links this class: the caller checks the catalog
 * first.
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
        return onMetastoreThread(() -> fetchHere(unwrapped, table, db, specs));
    }

    private static List<CatalogTablePartition> fetchHere(ExternalCatalog unwrapped,
                                                         CatalogTable table, String db,
                                                         List<Map<String, String>> specs) {
        HiveClient client = ((HiveExternalCatalog) unwrapped).client();
        RawHiveTable raw = rawTable(client, table, db);
        List<String> columns = CollectionConverters.asJava(table.partitionColumnNames());
        List<CatalogTablePartition> found = inOneCall(client, raw, columns, specs);
        if (found == null) {
            found = oneByOne(client, raw, specs);
        }
        if (found == null) {
            return null;
        }
        List<CatalogTablePartition> out = new ArrayList<>(found.size());
        for (CatalogTablePartition p : found) {
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

    /**
     * dpp's metastore calls, made on one thread of their own.
     *
     * <p>An embedded metastore (Spark's default, Derby) keeps one store per calling thread and
     * builds it on a thread's first call: a {@code HiveConf} parsed from its XML resources and
     * a persistence manager, tens of milliseconds. The scan's kept partitions are fetched
     * where Spark prepares the scan, on its exchange threads, a pool that grows to 128
     * threads: with many queries at once nearly every fetch met a thread new to the
     * metastore (measured: a fifth of that thread pool's CPU). One thread loses no
     * parallelism: the client runs one call at a time under its own lock anyway.
     */
    private static final java.util.concurrent.ExecutorService CALLS =
        java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "dpp-metastore");
            t.setDaemon(true);
            return t;
        });

    private static <T> T onMetastoreThread(java.util.concurrent.Callable<T> call) {
        java.util.concurrent.Future<T> f = CALLS.submit(call);
        try {
            return f.get();
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw new IllegalStateException("dpp: interrupted waiting for the metastore", e);
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw new IllegalStateException(cause);
        }
    }

    // the metastore's table by the client and the table's metadata as this query's analysis
    // read it (CatalogTable equality: database, name, partition columns, location,
    // properties, times): a table altered since is a different key and is read again
    private static final int RAW_TABLES = 64;
    private static final Map<Map.Entry<HiveClient, CatalogTable>, RawHiveTable> RAW =
        new java.util.LinkedHashMap<Map.Entry<HiveClient, CatalogTable>, RawHiveTable>(
                16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(
                    Map.Entry<Map.Entry<HiveClient, CatalogTable>, RawHiveTable> eldest) {
                return size() > RAW_TABLES;
            }
        };

    /** The metastore's table for {@code getPartitionsByNames}, which uses its database, name
     * and partition columns. Read once per table as the query's analysis saw it, not once
     * per query: reading it is a metastore call as costly as the partitions themselves, under
     * the client's one lock (measured: the largest single cost of a star join's scan with 16
     * queries at once). */
    private static RawHiveTable rawTable(HiveClient client, CatalogTable table, String db) {
        Map.Entry<HiveClient, CatalogTable> key =
            new java.util.AbstractMap.SimpleImmutableEntry<>(client, table);
        synchronized (RAW) {
            RawHiveTable hit = RAW.get(key);
            if (hit != null) {
                return hit;
            }
        }
        RawHiveTable raw = client.getRawHiveTable(db, table.identifier().table());
        synchronized (RAW) {
            RAW.put(key, raw);
        }
        return raw;
    }

    /** {@code HiveExternalCatalog.listPartitionNames(db, table)} without the catalog's lock
     * and without its reading the table again: the client's names (one metastore call, which
     * uses only the table's database and name), each column named as the table spells it and
     * each column and value escaped as Spark escapes them, exactly the catalog's rewriting of
     * them. The catalog's lock is what every query of the driver takes to be analysed; the
     * client's own lock is all the metastore needs. Null where a name names a column the
     * table does not have (the caller asks the catalog, which says what is wrong). */
    static scala.collection.Seq<String> names(ExternalCatalog unwrapped, CatalogTable table) {
        return onMetastoreThread(() -> namesHere(unwrapped, table));
    }

    private static scala.collection.Seq<String> namesHere(ExternalCatalog unwrapped,
                                                          CatalogTable table) {
        HiveClient client = ((HiveExternalCatalog) unwrapped).client();
        Map<String, String> byLower = new java.util.HashMap<>();
        for (String c : CollectionConverters.asJava(table.partitionColumnNames())) {
            byLower.put(c.toLowerCase(Locale.ROOT), ExternalCatalogUtils.escapePathName(c));
        }
        scala.collection.Seq<String> listed = client.getPartitionNames(table, Option.empty());
        List<String> out = new ArrayList<>(listed.size());
        StringBuilder b = new StringBuilder();
        for (String name : CollectionConverters.asJava(listed)) {
            b.setLength(0);
            for (scala.Tuple2<String, String> kv : CollectionConverters.asJava(
                    PartitioningUtils.parsePathFragmentAsSeq(name))) {
                String column = byLower.get(kv._1().toLowerCase());
                if (column == null) {
                    return null;
                }
                if (b.length() > 0) {
                    b.append('/');
                }
                b.append(column).append('=').append(ExternalCatalogUtils.escapePathName(kv._2()));
            }
            out.add(b.toString());
        }
        return CollectionConverters.asScala(out).toList();
    }

    /** The metastore's spec of a partition (lower-case column names, the catalog's
     * toMetaStorePartitionSpec), in the table's column order. */
    private static java.util.LinkedHashMap<String, String> metastoreSpec(List<String> columns,
                                                                         Map<String, String> spec) {
        Map<String, String> lower = new java.util.HashMap<>();
        for (Map.Entry<String, String> e : spec.entrySet()) {
            lower.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
        }
        java.util.LinkedHashMap<String, String> out = new java.util.LinkedHashMap<>();
        for (String c : columns) {
            String key = c.toLowerCase(Locale.ROOT);
            if (!lower.containsKey(key)) {
                return null;
            }
            out.put(key, lower.get(key));
        }
        return lower.size() == out.size() ? out : null;
    }

    /** One {@code getPartitionOption} per partition: null when one is missing. */
    private static List<CatalogTablePartition> oneByOne(HiveClient client, RawHiveTable raw,
                                                        List<Map<String, String>> specs) {
        List<CatalogTablePartition> out = new ArrayList<>(specs.size());
        for (Map<String, String> spec : specs) {
            scala.collection.immutable.Map<String, String> lower =
                scala.collection.immutable.Map$.MODULE$.empty();
            for (Map.Entry<String, String> e : spec.entrySet()) {
                lower = lower.updated(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
            }
            Option<CatalogTablePartition> found = client.getPartitionOption(raw, lower);
            if (found.isEmpty()) {
                return null;
            }
            out.add(found.get());
        }
        return out;
    }

    /** Every partition of {@code specs} in one metastore call, in the order of
     * {@code specs}, or null where this way does not apply (the caller asks one by one).
     * Reached by reflection: the client's Hive object is private to it, and the Hive classes
     * may live in the client's own class loader. */
    private static List<CatalogTablePartition> inOneCall(HiveClient client, RawHiveTable raw,
                                                         List<String> columns,
                                                         List<Map<String, String>> specs) {
        try {
            Object hiveTable = raw.rawTable();
            ClassLoader hiveLoader = hiveTable.getClass().getClassLoader();
            Class<?> warehouse = Class.forName("org.apache.hadoop.hive.metastore.Warehouse",
                true, hiveLoader);
            java.lang.reflect.Method makePartName =
                warehouse.getMethod("makePartName", Map.class, boolean.class);
            List<String> names = new ArrayList<>(specs.size());
            List<Map<String, String>> wanted = new ArrayList<>(specs.size());
            for (Map<String, String> spec : specs) {
                java.util.LinkedHashMap<String, String> ms = metastoreSpec(columns, spec);
                if (ms == null) {
                    return null;
                }
                names.add((String) makePartName.invoke(null, ms, false));
                wanted.add(ms);
            }
            java.lang.reflect.Method hiveOf = hiveAccessor(client.getClass());
            java.lang.reflect.Method withState =
                client.getClass().getMethod("withHiveState", scala.Function0.class);
            Object hive = hiveOf.invoke(client);
            java.lang.reflect.Method byNames = hive.getClass().getMethod("getPartitionsByNames",
                hiveTable.getClass(), List.class);
            // the call and the conversions inside the client's state: the table object, shared
            // between queries (rawTable), is only ever read under the client's lock
            @SuppressWarnings("unchecked")
            List<CatalogTablePartition> converted = (List<CatalogTablePartition>) withState.invoke(
                client, new scala.runtime.AbstractFunction0<Object>() {
                    @Override
                    public Object apply() {
                        try {
                            // the one call the shim would count (recordHiveCall)
                            org.apache.spark.metrics.source.HiveCatalogMetrics
                                .incrementHiveClientCalls(1);
                            List<?> parts = (List<?>) byNames.invoke(hive, hiveTable, names);
                            List<CatalogTablePartition> made = new ArrayList<>();
                            java.lang.reflect.Method convert = null;
                            for (Object part : parts == null ? java.util.Collections.emptyList() : parts) {
                                if (convert == null) {
                                    convert = client.getClass().getMethod("fromHivePartition",
                                        part.getClass());
                                }
                                made.add((CatalogTablePartition) convert.invoke(client, part));
                            }
                            return made;
                        } catch (ReflectiveOperationException e) {
                            throw new IllegalStateException(e);
                        }
                    }
                });
            if (converted.size() != specs.size()) {
                return null;
            }
            Map<Map<String, String>, CatalogTablePartition> bySpec = new java.util.HashMap<>();
            for (CatalogTablePartition p : converted) {
                Map<String, String> key = new java.util.HashMap<>();
                for (Map.Entry<String, String> e
                        : CollectionConverters.asJava(p.spec()).entrySet()) {
                    key.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
                }
                bySpec.put(key, p);
            }
            List<CatalogTablePartition> out = new ArrayList<>(specs.size());
            for (Map<String, String> ms : wanted) {
                CatalogTablePartition p = bySpec.get(new java.util.HashMap<>(ms));
                if (p == null) {
                    return null;
                }
                out.add(p);
            }
            return out;
        } catch (Throwable t) {
            DppFileIndex.LOG.debug("dpp: partitions of {} asked one by one ({})",
                raw.rawTable(), t.toString());
            return null;
        }
    }

    // the client class's private accessor of its Hive object, found once per class (a walk
    // over every declared method of the client and its parents)
    private static final Map<Class<?>, java.lang.reflect.Method> HIVE_OF =
        new java.util.concurrent.ConcurrentHashMap<>();

    private static java.lang.reflect.Method hiveAccessor(Class<?> c) throws NoSuchMethodException {
        java.lang.reflect.Method found = HIVE_OF.get(c);
        if (found != null) {
            return found;
        }
        for (Class<?> k = c; k != null && found == null; k = k.getSuperclass()) {
            for (java.lang.reflect.Method m : k.getDeclaredMethods()) {
                if (m.getName().equals("client") && m.getParameterCount() == 0) {
                    found = m;
                    break;
                }
            }
        }
        if (found == null) {
            throw new NoSuchMethodException(c.getName() + ".client");
        }
        found.setAccessible(true);
        HIVE_OF.put(c, found);
        return found;
    }
}
