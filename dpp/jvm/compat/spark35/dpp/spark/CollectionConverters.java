package dpp.spark;

import scala.collection.JavaConverters;

/**
 * Java and Scala collections converted, for Spark 3.5 (Scala 2.12, which has no
 * {@code scala.jdk.javaapi}): the same methods as {@code dpp/jvm/compat/spark4}'s, through
 * Scala 2.12's {@code JavaConverters}.
 */
final class CollectionConverters {
    private CollectionConverters() {
    }

    static <A> java.util.List<A> asJava(scala.collection.Seq<A> s) {
        return JavaConverters.seqAsJavaList(s);
    }

    static <K, V> java.util.Map<K, V> asJava(scala.collection.Map<K, V> m) {
        return JavaConverters.mapAsJavaMap(m);
    }

    static <A> scala.collection.mutable.Buffer<A> asScala(java.util.List<A> l) {
        return JavaConverters.asScalaBuffer(l);
    }

    static <K, V> scala.collection.mutable.Map<K, V> asScala(java.util.Map<K, V> m) {
        return JavaConverters.mapAsScalaMap(m);
    }
}
