package dpp.hadoop;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.fs.ByteBufferReadable;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.StreamCapabilities;

/**
 * A file's input stream counting the bytes read through it, into the counter its opener
 * chose (a build side's task, a query's task, the driver). Spark's own "input bytes" metric
 * reads Hadoop's per-thread statistics, which miss the bytes a vectored read fetches on other
 * threads (Parquet's default on Hadoop 3.4): a full column read then shows as a few KB. This
 * stream counts at the call, whatever thread completes it: a vectored read counts the
 * lengths of its ranges ({@code VectoredCountingInputStream}, compiled where Hadoop has
 * vectored reads: 3.3.5 and later); every other read the bytes it returned.
 */
class CountingInputStream extends FSInputStream implements ByteBufferReadable,
    StreamCapabilities {
  final FSDataInputStream in;
  final AtomicLong bytes;

  CountingInputStream(FSDataInputStream in, AtomicLong bytes) {
    this.in = in;
    this.bytes = bytes;
  }

  /** The counting stream for this Hadoop: one that counts vectored reads where Hadoop has
   * them (the class is compiled only there), else this one. */
  static CountingInputStream of(FSDataInputStream in, AtomicLong bytes) {
    if (VECTORED != null) {
      try {
        return (CountingInputStream) VECTORED.newInstance(in, bytes);
      } catch (ReflectiveOperationException e) {
        // counted without the vectored override below
      }
    }
    return new CountingInputStream(in, bytes);
  }

  private static final java.lang.reflect.Constructor<?> VECTORED = vectored();

  private static java.lang.reflect.Constructor<?> vectored() {
    try {
      return Class.forName("dpp.hadoop.VectoredCountingInputStream")
          .getDeclaredConstructor(FSDataInputStream.class, AtomicLong.class);
    } catch (ReflectiveOperationException | LinkageError e) {
      return null;
    }
  }

  private int counted(int n) {
    if (n > 0) {
      bytes.addAndGet(n);
    }
    return n;
  }

  @Override
  public int read() throws IOException {
    int b = in.read();
    if (b >= 0) {
      bytes.incrementAndGet();
    }
    return b;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    return counted(in.read(b, off, len));
  }

  @Override
  public int read(ByteBuffer buf) throws IOException {
    if (in.hasCapability(StreamCapabilities.READBYTEBUFFER)) {
      return counted(in.read(buf));
    }
    // the stream below reads into arrays only (the local disk's checksummed one): into the
    // buffer's own array where it has one, else through a copy
    if (buf.hasArray()) {
      int n = in.read(buf.array(), buf.arrayOffset() + buf.position(), buf.remaining());
      if (n > 0) {
        buf.position(buf.position() + n);
      }
      return counted(n);
    }
    byte[] tmp = new byte[Math.min(buf.remaining(), 1 << 20)];
    int n = in.read(tmp, 0, tmp.length);
    if (n > 0) {
      buf.put(tmp, 0, n);
    }
    return counted(n);
  }

  @Override
  public int read(long position, byte[] buffer, int offset, int length) throws IOException {
    return counted(in.read(position, buffer, offset, length));
  }

  @Override
  public void readFully(long position, byte[] buffer, int offset, int length)
      throws IOException {
    in.readFully(position, buffer, offset, length);
    bytes.addAndGet(length);
  }

  @Override
  public void readFully(long position, byte[] buffer) throws IOException {
    readFully(position, buffer, 0, buffer.length);
  }

  @Override
  public void seek(long pos) throws IOException {
    in.seek(pos);
  }

  @Override
  public long getPos() throws IOException {
    return in.getPos();
  }

  @Override
  public boolean seekToNewSource(long targetPos) throws IOException {
    return in.seekToNewSource(targetPos);
  }

  @Override
  public long skip(long n) throws IOException {
    return in.skip(n);
  }

  @Override
  public int available() throws IOException {
    return in.available();
  }

  @Override
  public boolean hasCapability(String capability) {
    return in.hasCapability(capability);
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
