"""The optimizer hook's Python side: the JVM rule describes Spark's optimized plan, this
package answers which relations to wrap and, at listing time, what each keeps."""
