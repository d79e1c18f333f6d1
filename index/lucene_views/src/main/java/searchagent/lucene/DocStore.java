package searchagent.lucene;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.store.IOContext;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.store.IndexOutput;

/**
 * The stored documents, uncompressed, by ordinal: {@code store/docs.bin} holds per document its
 * field count then each field as a UTF-8 length and bytes (doc_id, title, url, text, each link);
 * {@code store/offsets.bin} one offset per ordinal. Reading ten documents is ten seeks into a
 * memory-mapped file, where Lucene's stored fields decompress a whole block per document.
 */
final class DocStore implements AutoCloseable {
  static final String DIR = "store";
  private static final String DOCS = "docs.bin";
  private static final String OFFSETS = "offsets.bin";

  private final Directory dir;
  private final IndexInput docs;
  private final long[] offsets;

  DocStore(Path root) throws IOException {
    dir = FSDirectory.open(root.resolve(DIR));
    docs = dir.openInput(DOCS, IOContext.DEFAULT);
    try (IndexInput in = dir.openInput(OFFSETS, IOContext.READONCE)) {
      offsets = new long[(int) (in.length() / Long.BYTES)];
      in.readLongs(offsets, 0, offsets.length);
    }
  }

  int size() {
    return offsets.length;
  }

  /**
   * Appends one document's fields, UTF-8, to {@code body} and their count and byte lengths to
   * {@code head} (space separated), in stored order.
   */
  void appendFields(int ord, StringBuilder head, ByteArrayOutputStream body)
      throws IOException {
    IndexInput in = docs.clone();
    in.seek(offsets[ord]);
    int n = in.readVInt();
    head.append(n).append(' ');
    byte[] buffer = new byte[4096];
    for (int i = 0; i < n; i++) {
      int len = in.readVInt();
      if (len > buffer.length) {
        buffer = new byte[Math.max(len, 2 * buffer.length)];
      }
      in.readBytes(buffer, 0, len);
      head.append(len).append(' ');
      body.write(buffer, 0, len);
    }
  }

  /** The UTF-8 bytes of one document's first {@code count} fields (doc_id, title, url, text). */
  byte[][] fields(int ord, int count) throws IOException {
    IndexInput in = docs.clone();
    in.seek(offsets[ord]);
    int n = in.readVInt();
    if (n < count) {
      throw new IllegalStateException("stored document " + ord + " has " + n + " fields");
    }
    byte[][] out = new byte[count][];
    for (int i = 0; i < count; i++) {
      out[i] = new byte[in.readVInt()];
      in.readBytes(out[i], 0, out[i].length);
    }
    return out;
  }

  /** One document's text (its fourth field). */
  String text(int ord) throws IOException {
    return new String(fields(ord, 4)[3], StandardCharsets.UTF_8);
  }

  @Override
  public void close() throws IOException {
    docs.close();
    dir.close();
  }

  /** Appends documents in ordinal order. */
  static final class Writer implements AutoCloseable {
    private final Directory dir;
    private final IndexOutput docs;
    private final IndexOutput offsets;

    /**
     * Creates the store of a new build; files a failed build left behind (its indexes were never
     * committed, which the caller checked) are replaced.
     */
    Writer(Path root) throws IOException {
      dir = FSDirectory.open(root.resolve(DIR));
      for (String name : new String[] {DOCS, OFFSETS}) {
        if (Files.exists(root.resolve(DIR).resolve(name))) {
          dir.deleteFile(name);
        }
      }
      docs = dir.createOutput(DOCS, IOContext.DEFAULT);
      offsets = dir.createOutput(OFFSETS, IOContext.DEFAULT);
    }

    void add(String... fields) throws IOException {
      add(fields, fields.length);
    }

    void add(String[] fields, int n) throws IOException {
      offsets.writeLong(docs.getFilePointer());
      docs.writeVInt(n);
      for (int i = 0; i < n; i++) {
        byte[] b = fields[i].getBytes(StandardCharsets.UTF_8);
        docs.writeVInt(b.length);
        docs.writeBytes(b, b.length);
      }
    }

    @Override
    public void close() throws IOException {
      docs.close();
      offsets.close();
      dir.close();
    }
  }
}
