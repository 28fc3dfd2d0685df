package dpp.hadoop;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileRange;

/**
 * {@link CountingInputStream} with Hadoop's vectored read (Hadoop 3.3.5 and later, Parquet's
 * default read on 3.4): the lengths of its ranges are counted at the call, since the bytes
 * arrive on other threads. Compiled only against a Hadoop that has {@code FileRange}
 * ({@code hive_splits.storage_calls}); {@link CountingInputStream#of} finds it by name.
 */
final class VectoredCountingInputStream extends CountingInputStream {
  VectoredCountingInputStream(FSDataInputStream in, AtomicLong bytes) {
    super(in, bytes);
  }

  @Override
  public void readVectored(List<? extends FileRange> ranges, IntFunction<ByteBuffer> allocate)
      throws IOException {
    long n = 0;
    for (FileRange r : ranges) {
      n += r.getLength();
    }
    bytes.addAndGet(n);
    in.readVectored(ranges, allocate);
  }
}
