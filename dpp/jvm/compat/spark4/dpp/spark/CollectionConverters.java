package dpp.spark;

/**
 * Java and Scala collections converted, for Spark 4.x (Scala 2.13): the part of Scala's
 * {@code scala.jdk.javaapi.CollectionConverters} dpp uses, under the same name in dpp's
 * package, so one source serves Scala 2.12 too ({@code dpp/jvm/compat/spark35}). Sources
 * in {@code dpp/jvm/src} use it by not importing Scala's.
 */
final class CollectionConverters {
    private CollectionConverters() {
    }

    static <A> java.util.List<A> asJava(scala.collection.Seq<A> s) {
        return scala.jdk.javaapi.CollectionConverters.asJava(s);
    }

    static <K, V> java.util.Map<K, V> asJava(scala.collection.Map<K, V> m) {
        return scala.jdk.javaapi.CollectionConverters.asJava(m);
    }

    static <A> scala.collection.mutable.Buffer<A> asScala(java.util.List<A> l) {
        return scala.jdk.javaapi.CollectionConverters.asScala(l);
    }

    static <K, V> scala.collection.mutable.Map<K, V> asScala(java.util.Map<K, V> m) {
        return scala.jdk.javaapi.CollectionConverters.asScala(m);
    }
}
