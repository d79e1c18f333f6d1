package searchagent.lucene;

import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogByteSizeMergePolicy;
import org.apache.lucene.store.FSDirectory;

/**
 * Writes the doc index (doc and title views) and the passage index of a new
 * Lucene views directory. Documents come in batches from Python; each batch
 * is indexed into the two indexes on two threads. {@link #close} commits and
 * merges each index to one segment.
 */
public final class ViewsWriter implements AutoCloseable {
  private final IndexWriter docWriter;
  private final IndexWriter passageWriter;
  private final DocStore.Writer store;
  private final int window;
  private final int stride;
  // Daemon threads: a writer left open never holds the JVM (and Python) at exit.
  private final ExecutorService pool =
      Executors.newFixedThreadPool(
          2,
          r -> {
            Thread t = new Thread(r, "lucene-views-writer");
            t.setDaemon(true);
            return t;
          });
  private long docs;
  private long passages;

  /**
   * @param dir the views directory (its doc/ and passage/ must not exist)
   * @param window passage window in words
   * @param stride words between passage starts
   * @param ramBufferMb indexing buffer per index, capped at a quarter of the JVM's heap (two
   *     buffers over it filled the heap: OutOfMemoryError mid-build)
   */
  public ViewsWriter(
      String dir, int window, int stride, boolean stem, boolean removeStopwords, double ramBufferMb)
      throws IOException {
    if (window < 1 || stride < 1 || stride > window) {
      throw new IllegalArgumentException(
          "need window >= 1 and 1 <= stride <= window, got " + window + ", " + stride);
    }
    this.window = window;
    this.stride = stride;
    ramBufferMb = Math.min(ramBufferMb, Runtime.getRuntime().maxMemory() / (4.0 * (1 << 20)));
    // What was opened is rolled back if a later part fails: its write.lock
    // would otherwise stay held by this JVM and block every retry in-process.
    IndexWriter d = null;
    IndexWriter p = null;
    try {
      d = open(Path.of(dir, Views.DOC_DIR), stem, removeStopwords, ramBufferMb);
      p = open(Path.of(dir, Views.PASSAGE_DIR), stem, removeStopwords, ramBufferMb);
      store = new DocStore.Writer(Path.of(dir));
    } catch (IOException | RuntimeException e) {
      for (IndexWriter w : new IndexWriter[] {p, d}) {
        if (w != null) {
          try {
            w.rollback();
          } catch (IOException | RuntimeException suppressed) {
            e.addSuppressed(suppressed);
          }
        }
      }
      pool.shutdownNow();
      throw e;
    }
    docWriter = d;
    passageWriter = p;
  }

  private static IndexWriter open(Path path, boolean stem, boolean stop, double ramMb)
      throws IOException {
    IndexWriterConfig c = new IndexWriterConfig(EnglishAnalysis.analyzer(stem, stop));
    c.setOpenMode(IndexWriterConfig.OpenMode.CREATE_OR_APPEND);
    c.setRAMBufferSizeMB(ramMb);
    // Adjacent merges only: doc ids keep the order documents were added in.
    c.setMergePolicy(new LogByteSizeMergePolicy());
    c.setCommitOnClose(true);
    IndexWriter w = new IndexWriter(FSDirectory.open(path), c);
    if (w.getDocStats().maxDoc > 0) {
      w.close();
      throw new IllegalStateException(path + " already holds an index; pick an empty directory");
    }
    return w;
  }

  /**
   * Adds a batch of documents with ordinals continuing the previous batches.
   *
   * @param sites each document's URL host suffixes, space separated
   * @param linkCounts how many entries of {@code links} each document owns, in order
   */
  public void add(
      String[] ids,
      String[] titles,
      String[] urls,
      String[] texts,
      String[] sites,
      int[] linkCounts,
      String[] links)
      throws Exception {
    int n = ids.length;
    if (titles.length != n || urls.length != n || texts.length != n || sites.length != n
        || linkCounts.length != n) {
      throw new IllegalArgumentException("batch arrays differ in length");
    }
    long first = docs;
    Future<?> d = pool.submit(() -> {
      int link = 0;
      for (int i = 0; i < n; i++) {
        Document doc = new Document();
        doc.add(new NumericDocValuesField(Views.ORD, first + i));
        doc.add(new StringField(Views.DOC_ID, ids[i], Field.Store.NO));
        addSites(doc, sites[i]);
        doc.add(new TextField(Views.TITLE, titles[i], Field.Store.NO));
        doc.add(new TextField(Views.TEXT, texts[i], Field.Store.NO));
        docWriter.addDocument(doc);
        String[] fields = new String[4 + linkCounts[i]];
        fields[0] = ids[i];
        fields[1] = titles[i];
        fields[2] = urls[i];
        fields[3] = texts[i];
        for (int j = 0; j < linkCounts[i]; j++) {
          fields[4 + j] = links[link++];
        }
        store.add(fields);
      }
      return null;
    });
    Future<Long> p = pool.submit(() -> {
      long count = 0;
      for (int i = 0; i < n; i++) {
        for (String passage : passages(texts[i], window, stride)) {
          Document doc = new Document();
          doc.add(new NumericDocValuesField(Views.ORD, first + i));
          addSites(doc, sites[i]);
          doc.add(new TextField(Views.TEXT, passage, Field.Store.NO));
          passageWriter.addDocument(doc);
          count++;
        }
      }
      return count;
    });
    d.get();
    passages += p.get();
    docs += n;
  }

  private static void addSites(Document doc, String sites) {
    if (sites.isEmpty()) {
      return;
    }
    for (String s : sites.split(" ")) {
      doc.add(new StringField(Views.SITE, s, Field.Store.NO));
    }
  }

  /** Python's str.isspace for one char (str.split's separators). */
  static boolean isSpace(char c) {
    return Character.isWhitespace(c) || Character.isSpaceChar(c) || c == '\u0085';
  }

  /**
   * The word windows of corpus/passages.py (split_passages): windows of {@code window} words
   * every {@code stride} words, the last one the first that reaches the end; an empty text has
   * one empty window. Each window is the text from its first word to its last.
   */
  static java.util.List<String> passages(String text, int window, int stride) {
    java.util.ArrayList<Integer> starts = new java.util.ArrayList<>();
    java.util.ArrayList<Integer> ends = new java.util.ArrayList<>();
    int i = 0, n = text.length();
    while (i < n) {
      while (i < n && isSpace(text.charAt(i))) i++;
      if (i >= n) break;
      int s = i;
      while (i < n && !isSpace(text.charAt(i))) i++;
      starts.add(s);
      ends.add(i);
    }
    java.util.ArrayList<String> out = new java.util.ArrayList<>();
    int words = starts.size();
    if (words == 0) {
      out.add("");
      return out;
    }
    int start = 0;
    while (true) {
      int last = Math.min(start + window, words) - 1;
      out.add(text.substring(starts.get(start), ends.get(last)));
      if (start + window >= words) break;
      start += stride;
    }
    return out;
  }

  /** The indexing buffer of each index (MB), after the heap cap. */
  public double ramBufferMb() {
    return docWriter.getConfig().getRAMBufferSizeMB();
  }

  /** {documents, passages} added so far. */
  public long[] counts() {
    return new long[] {docs, passages};
  }

  /** Commits, merges each index to one segment, and closes. */
  @Override
  public void close() throws Exception {
    store.close();
    Future<?> d = pool.submit(() -> {
      docWriter.forceMerge(1);
      docWriter.close();
      return null;
    });
    Future<?> p = pool.submit(() -> {
      passageWriter.forceMerge(1);
      passageWriter.close();
      return null;
    });
    try {
      d.get();
      p.get();
    } finally {
      pool.shutdown();
    }
  }

  /** Closes without merging (after a failed build). */
  public void abort() throws IOException {
    pool.shutdownNow();
    store.close();
    docWriter.rollback();
    passageWriter.rollback();
  }
}
