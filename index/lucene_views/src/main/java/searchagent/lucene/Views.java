package searchagent.lucene;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.tokenattributes.PositionIncrementAttribute;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopScoreDocCollectorManager;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.search.similarities.PerFieldSimilarityWrapper;
import org.apache.lucene.search.similarities.Similarity;
import org.apache.lucene.store.FSDirectory;

/**
 * The three BM25 views of search_agent/search/backend.py over Lucene, searched
 * in-process: one call answers one query's three views and their weighted RRF
 * (search_agent/search/fusion.py), so a caller over a bridge pays it once per
 * query. Thread-safe.
 *
 * <p>Queries mirror the tantivy backend: every scoring word a SHOULD term clause,
 * every quoted phrase a MUST phrase clause of the view's field (one-term phrases
 * a MUST term), the site filter a non-scoring FILTER term on the indexed host
 * suffixes; no clause at all matches nothing.
 */
public final class Views implements AutoCloseable {
  static final String DOC_DIR = "doc";
  static final String PASSAGE_DIR = "passage";
  static final String ORD = "doc_ord";
  static final String DOC_ID = "doc_id";
  static final String SITE = "site";
  static final String TITLE = "title";
  static final String TEXT = "text";

  private final DirectoryReader docReader;
  private final DirectoryReader passageReader;
  private final IndexSearcher docSearcher;
  private final IndexSearcher passageSearcher;
  private final int[] docOrd;
  private final int[] passageOrd;
  private final String[] docIds;
  private final DocStore store;
  private final Analyzer analyzer;
  private final Snippets snippets = new Snippets(500_000);
  private final ExecutorService viewPool;
  private final int cores = Math.max(2, Runtime.getRuntime().availableProcessors());
  private final AtomicInteger inFlight = new AtomicInteger();

  /**
   * Opens a views directory.
   *
   * @param dir holds doc/, passage/ and doc_ids.txt (one doc_id per ordinal)
   * @param bm25 k1 and b of the doc, passage and title views (6 numbers)
   * @param parallelViews search the passage view on a second thread while the caller's searches
   *     the doc and title views (only while fewer queries than cores are in flight)
   */
  public Views(
      String dir, boolean stem, boolean removeStopwords, float[] bm25, boolean parallelViews)
      throws IOException {
    if (bm25.length != 6) {
      throw new IllegalArgumentException("bm25 needs k1, b for doc, passage, title: 6 numbers");
    }
    Path root = Path.of(dir);
    docReader = DirectoryReader.open(FSDirectory.open(root.resolve(DOC_DIR)));
    passageReader = DirectoryReader.open(FSDirectory.open(root.resolve(PASSAGE_DIR)));
    BM25Similarity doc = new BM25Similarity(bm25[0], bm25[1]);
    BM25Similarity title = new BM25Similarity(bm25[4], bm25[5]);
    docSearcher = new IndexSearcher(docReader);
    docSearcher.setSimilarity(
        new PerFieldSimilarityWrapper() {
          @Override
          public Similarity get(String field) {
            return TITLE.equals(field) ? title : doc;
          }
        });
    passageSearcher = new IndexSearcher(passageReader);
    passageSearcher.setSimilarity(new BM25Similarity(bm25[2], bm25[3]));
    docOrd = ordinals(docReader);
    passageOrd = ordinals(passageReader);
    docIds = Files.readAllLines(root.resolve("doc_ids.txt")).toArray(new String[0]);
    if (docIds.length != docReader.numDocs()) {
      throw new IllegalStateException(
          dir + ": " + docIds.length + " doc_ids but " + docReader.numDocs()
              + " indexed documents; rebuild it");
    }
    store = new DocStore(root);
    if (store.size() != docIds.length) {
      throw new IllegalStateException(dir + ": the document store does not match; rebuild it");
    }
    analyzer = EnglishAnalysis.analyzer(stem, removeStopwords);
    viewPool = parallelViews ? Executors.newFixedThreadPool(cores, r -> {
      Thread t = new Thread(r, "lucene-view");
      t.setDaemon(true);
      return t;
    }) : null;
  }

  private static int[] ordinals(DirectoryReader reader) throws IOException {
    int[] out = new int[reader.maxDoc()];
    Arrays.fill(out, -1);
    for (LeafReaderContext leaf : reader.leaves()) {
      NumericDocValues values = leaf.reader().getNumericDocValues(ORD);
      if (values == null) {
        continue;
      }
      for (int d = values.nextDoc(); d != DocIdSetIterator.NO_MORE_DOCS; d = values.nextDoc()) {
        out[leaf.docBase + d] = (int) values.longValue();
      }
    }
    return out;
  }

  public int numDocuments() {
    return docReader.numDocs();
  }

  /** Index terms of a text, in order (stopwords dropped). */
  public String[] terms(String text) throws IOException {
    List<String> out = new ArrayList<>();
    try (TokenStream s = analyzer.tokenStream(TEXT, text)) {
      CharTermAttribute term = s.addAttribute(CharTermAttribute.class);
      s.reset();
      while (s.incrementToken()) {
        out.add(term.toString());
      }
      s.end();
    }
    return out.toArray(new String[0]);
  }

  /** A query analyzed once for all views: its terms and its phrases' (position, term)s. */
  private record Analyzed(List<String> terms, List<int[]> positions, List<String[]> phrases) {}

  private Analyzed analyze(String words, String[] phrases) throws IOException {
    List<int[]> positions = new ArrayList<>();
    List<String[]> phraseTerms = new ArrayList<>();
    for (String p : phrases) {
      List<Integer> at = new ArrayList<>();
      List<String> terms = new ArrayList<>();
      int position = -1;
      try (TokenStream s = analyzer.tokenStream(TEXT, p)) {
        CharTermAttribute term = s.addAttribute(CharTermAttribute.class);
        PositionIncrementAttribute inc = s.addAttribute(PositionIncrementAttribute.class);
        s.reset();
        while (s.incrementToken()) {
          position += inc.getPositionIncrement();
          at.add(position);
          terms.add(term.toString());
        }
        s.end();
      }
      if (!terms.isEmpty()) {
        positions.add(at.stream().mapToInt(Integer::intValue).toArray());
        phraseTerms.add(terms.toArray(new String[0]));
      }
    }
    return new Analyzed(Arrays.asList(terms(words)), positions, phraseTerms);
  }

  /** The view's query, or null when nothing constrains it (matches nothing). */
  private static Query query(String field, Analyzed a, String site) {
    if (a.terms.isEmpty() && a.phrases.isEmpty()) {
      return null;
    }
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    for (String t : a.terms) {
      b.add(new TermQuery(new Term(field, t)), BooleanClause.Occur.SHOULD);
    }
    for (int i = 0; i < a.phrases.size(); i++) {
      String[] terms = a.phrases.get(i);
      if (terms.length == 1) {
        b.add(new TermQuery(new Term(field, terms[0])), BooleanClause.Occur.MUST);
        continue;
      }
      PhraseQuery.Builder p = new PhraseQuery.Builder();
      for (int j = 0; j < terms.length; j++) {
        p.add(new Term(field, terms[j]), a.positions.get(i)[j]);
      }
      b.add(p.build(), BooleanClause.Occur.MUST);
    }
    if (site != null) {
      b.add(new TermQuery(new Term(SITE, site)), BooleanClause.Occur.FILTER);
    }
    return b.build();
  }

  private int[] top(IndexSearcher searcher, int[] ords, Query q, int limit) throws IOException {
    if (q == null || limit <= 0) {
      return new int[0];
    }
    // Counting no hits past the top `limit` lets block-max WAND skip at once.
    ScoreDoc[] hits =
        searcher.search(q, new TopScoreDocCollectorManager(limit, null, limit)).scoreDocs;
    int[] out = new int[hits.length];
    for (int i = 0; i < hits.length; i++) {
      out[i] = ords[hits[i].doc];
    }
    return out;
  }

  private int[] passageParents(Query q, int k) throws IOException {
    if (q == null || k <= 0) {
      return new int[0];
    }
    return passageSearcher.search(q, new BestPassageParents(passageOrd, k));
  }

  /**
   * The passage view's parents from every matching passage, best passage first: the reference
   * the pruning collector ({@link BestPassageParents}) must equal (tests and benchmarks).
   */
  public int[] passageParentsExhaustive(String words, String[] phrases, String site, int k)
      throws IOException {
    Query q = query(TEXT, analyze(words, phrases), site);
    if (q == null || k <= 0) {
      return new int[0];
    }
    int all = Math.max(1, passageReader.maxDoc());
    ScoreDoc[] hits =
        passageSearcher.search(q, new TopScoreDocCollectorManager(all, null, all)).scoreDocs;
    LinkedHashSet<Integer> parents = new LinkedHashSet<>();
    for (ScoreDoc h : hits) {
      parents.add(passageOrd[h.doc]);
      if (parents.size() == k) {
        break;
      }
    }
    return parents.stream().mapToInt(Integer::intValue).toArray();
  }

  /**
   * One view's ordinals, up to k best first.
   *
   * @param view 0 (doc), 1 (passage) or 2 (title)
   */
  public int[] rankView(int view, String words, String[] phrases, String site, int k)
      throws IOException {
    return rank(view, analyze(words, phrases), site, k);
  }

  private int[] rank(int view, Analyzed a, String site, int k) throws IOException {
    switch (view) {
      case 0:
        return top(docSearcher, docOrd, query(TEXT, a, site), k);
      case 1:
        return passageParents(query(TEXT, a, site), k);
      case 2:
        return top(docSearcher, docOrd, query(TITLE, a, site), k);
      default:
        throw new IllegalArgumentException("view must be 0 (doc), 1 (passage) or 2 (title)");
    }
  }

  /**
   * One query's three views, each up to {@code k} document ordinals best first.
   *
   * @param words the scoring words, space separated (analyzed here)
   * @param phrases the quoted phrases, each one MUST clause
   * @param site the site filter, or null
   * @return {doc, passage, title} ordinals
   */
  public int[][] viewRankings(String words, String[] phrases, String site, int k)
      throws Exception {
    if (k < 1) {
      throw new IllegalArgumentException("k must be >= 1, got " + k);
    }
    return rankViews(words, phrases, site, new int[] {k, k, k});
  }

  /** The three views, each to its own depth ({doc, passage, title}). */
  private int[][] rankViews(String words, String[] phrases, String site, int[] depths)
      throws Exception {
    Analyzed a = analyze(words, phrases);
    if (viewPool == null || inFlight.incrementAndGet() > cores - 1) {
      try {
        return new int[][] {
          rank(0, a, site, depths[0]), rank(1, a, site, depths[1]), rank(2, a, site, depths[2])
        };
      } finally {
        if (viewPool != null) {
          inFlight.decrementAndGet();
        }
      }
    }
    try {
      Future<int[]> passage = viewPool.submit(() -> rank(1, a, site, depths[1]));
      int[] doc = rank(0, a, site, depths[0]);
      int[] title = rank(2, a, site, depths[2]);
      return new int[][] {doc, passage.get(), title};
    } finally {
      inFlight.decrementAndGet();
    }
  }

  private static final class Fused {
    double score;
    int best = Integer.MAX_VALUE;
  }

  /** A query's fused documents, best first: ordinals and their weighted-RRF scores. */
  private record Ranked(int[] ords, double[] scores) {}

  /**
   * One query's weighted RRF over its three views (fusion.weighted_rrf): each view searched to
   * its own depth in {@code depths} (the first of a deeper search: each view's order is total),
   * then score(d) = sum over views of w_v / (rrfK + rank_v(d)), ties by best single-view rank,
   * then doc_id.
   *
   * @param depths per view {doc, passage, title}
   * @param weights per view {doc, passage, title}
   * @return ordinal, score, ordinal, score, ... best first
   */
  public double[] fused(
      String words, String[] phrases, String site, int[] depths, double[] weights, double rrfK)
      throws Exception {
    Ranked r = fuse(words, phrases, site, depths, weights, rrfK);
    double[] out = new double[r.ords.length * 2];
    for (int i = 0; i < r.ords.length; i++) {
      out[2 * i] = r.ords[i];
      out[2 * i + 1] = r.scores[i];
    }
    return out;
  }

  private Ranked fuse(
      String words, String[] phrases, String site, int[] depths, double[] weights, double rrfK)
      throws Exception {
    if (depths.length != 3 || weights.length != 3) {
      throw new IllegalArgumentException("depths and weights need one value per view (3)");
    }
    int[][] views = rankViews(words, phrases, site, depths);
    Map<Integer, Fused> acc = new LinkedHashMap<>();
    for (int v = 0; v < 3; v++) {
      int n = Math.min(depths[v], views[v].length);
      for (int r = 0; r < n; r++) {
        Fused f = acc.computeIfAbsent(views[v][r], o -> new Fused());
        f.score += weights[v] / (rrfK + (r + 1));
        f.best = Math.min(f.best, r + 1);
      }
    }
    List<Map.Entry<Integer, Fused>> order = new ArrayList<>(acc.entrySet());
    order.sort(
        (a, b) -> {
          int c = Double.compare(b.getValue().score, a.getValue().score);
          if (c != 0) return c;
          c = Integer.compare(a.getValue().best, b.getValue().best);
          if (c != 0) return c;
          return docIds[a.getKey()].compareTo(docIds[b.getKey()]);
        });
    int[] ords = new int[order.size()];
    double[] scores = new double[order.size()];
    for (int i = 0; i < ords.length; i++) {
      ords[i] = order.get(i).getKey();
      scores[i] = order.get(i).getValue().score;
    }
    return new Ranked(ords, scores);
  }

  /**
   * One query answered in one call: its fused ranking ({@link #fused}) and, for the first {@code
   * candidates} documents, what a hit shows: title, URL and, for the first {@code snipped} of
   * them, the snippet {@link #snippets} would cut. One UTF-8 byte array: an ASCII header line of
   * space-separated fields, the number of fused documents, then per candidate its ordinal, its
   * score (shortest round-trip decimal) and the byte lengths of its title, URL and snippet (-1 and
   * -2 as in {@link #snippets}, -3 past {@code snipped}); then the titles, URLs and snippets back
   * to back, candidate by candidate; then the unanalyzed words, one per line. The snippet
   * arguments are {@link #snippets}'.
   */
  public byte[] search(
      String words, String[] phrases, String site, int[] depths, double[] weights, double rrfK,
      int candidates, int snipped, String terms, double[] idf, String phraseTokens,
      String prefixes, String extraCases, String newWords, String newTerms, int windowWords,
      int maxWords, double k1, double b) throws Exception {
    Ranked r = fuse(words, phrases, site, depths, weights, rrfK);
    int n = Math.min(Math.max(0, candidates), r.ords.length);
    int cut = Math.min(Math.max(0, snipped), n);
    Snippets.Query q = cut == 0 ? null : snippetQuery(
        terms, idf, phraseTokens, prefixes, extraCases, newWords, newTerms, windowWords,
        maxWords, k1, b);
    StringBuilder head = new StringBuilder().append(r.ords.length);
    ByteArrayOutputStream body = new ByteArrayOutputStream(1 << 12);
    Set<String> unknown = new LinkedHashSet<>();
    for (int i = 0; i < n; i++) {
      int ord = r.ords[i];
      byte[][] fields = store.fields(ord, i < cut ? 4 : 3); // the text only to cut a snippet
      head.append(' ').append(ord).append(' ').append(r.scores[i]);
      head.append(' ').append(fields[1].length).append(' ').append(fields[2].length);
      body.write(fields[1], 0, fields[1].length);
      body.write(fields[2], 0, fields[2].length);
      if (i >= cut) {
        head.append(" -3");
        continue;
      }
      String snippet = snippets.snippet(
          new String(fields[3], StandardCharsets.UTF_8), q, unknown);
      appendSnippet(snippet, head, body);
    }
    return finish(head, body, unknown);
  }

  private Snippets.Query snippetQuery(
      String terms, double[] idf, String phrases, String prefixes, String extraCases,
      String newWords, String newTerms, int windowWords, int maxWords, double k1, double b) {
    if (!newWords.isEmpty()) {
      snippets.learn(newWords.split("\n", -1), newTerms.split("\n", -1));
    }
    String[] lines = lines(phrases);
    String[][] tokens = new String[lines.length][];
    for (int i = 0; i < lines.length; i++) {
      tokens[i] = lines[i].split(" ");
    }
    return new Snippets.Query(
        lines(terms), idf, tokens, lines(prefixes), extraCases, windowWords, maxWords, k1, b);
  }

  /** A snippet's header field (its byte length, or -1 / -2) and its bytes. */
  private static void appendSnippet(
      String snippet, StringBuilder head, ByteArrayOutputStream body) {
    if (snippet == null || snippet == Snippets.UNANALYZED) {
      head.append(snippet == null ? " -1" : " -2");
      return;
    }
    byte[] bytes = snippet.getBytes(StandardCharsets.UTF_8);
    head.append(' ').append(bytes.length);
    body.write(bytes, 0, bytes.length);
  }

  /** The header line, then the body, then the unanalyzed words. */
  private static byte[] finish(
      StringBuilder head, ByteArrayOutputStream body, Set<String> unknown) {
    if (!unknown.isEmpty()) {
      byte[] words = String.join("\n", unknown).getBytes(StandardCharsets.UTF_8);
      body.write(words, 0, words.length);
    }
    byte[] h = head.append('\n').toString().getBytes(StandardCharsets.US_ASCII);
    byte[] out = new byte[h.length + body.size()];
    System.arraycopy(h, 0, out, 0, h.length);
    System.arraycopy(body.toByteArray(), 0, out, h.length, body.size());
    return out;
  }

  /**
   * Stored documents by doc_id, as one UTF-8 byte array (one bridge crossing, no string
   * conversion): an ASCII header line of space-separated numbers, then the fields back to back.
   * Per id the header has the number of fields (0: unknown; else 4 + links: doc_id, title, url,
   * text, each link), then each field's length in bytes.
   */
  public byte[] documents(String[] ids) throws IOException {
    StringBuilder head = new StringBuilder();
    ByteArrayOutputStream body = new ByteArrayOutputStream(1 << 15);
    for (String id : ids) {
      int found = lookup(id);
      if (found < 0) {
        head.append("0 ");
      } else {
        store.appendFields(docOrd[found], head, body);
      }
    }
    return finish(head, body, Set.of());
  }

  private int lookup(String id) throws IOException {
    Term t = new Term(DOC_ID, id);
    for (LeafReaderContext leaf : docReader.leaves()) {
      PostingsEnum p = leaf.reader().postings(t, PostingsEnum.NONE);
      if (p != null) {
        int d = p.nextDoc();
        if (d != DocIdSetIterator.NO_MORE_DOCS) {
          return leaf.docBase + d;
        }
      }
    }
    return -1;
  }

  /**
   * Query-focused snippets of documents by doc_id, cut as search_agent/search/snippets.py's
   * make_snippet cuts them (see {@link Snippets}), as one UTF-8 byte array: an ASCII header line
   * with one number per id (the snippet's length in bytes; -1 where the caller must cut it itself:
   * an unknown id or a case {@link Snippets} declines; -2 where a candidate word was never
   * analyzed), then the snippets back to back, then the unanalyzed words, one per line: the caller
   * analyzes them and asks again for the -2 documents, passing them as {@code newWords} and their
   * terms as {@code newTerms} (one per line, "" for none).
   *
   * @param terms the query's index terms in the BM25 sum's order, one per line
   * @param idf each term's corpus idf
   * @param phrases the quoted phrases' lowercase tokens, space separated, one phrase per line
   * @param prefixes what a candidate word starts with, one per line
   * @param extraCases characters whose presence in a lowercased text declines it
   */
  public byte[] snippets(
      String[] ids, String terms, double[] idf, String phrases, String prefixes,
      String extraCases, String newWords, String newTerms, int windowWords, int maxWords,
      double k1, double b) throws IOException {
    Snippets.Query q = snippetQuery(
        terms, idf, phrases, prefixes, extraCases, newWords, newTerms, windowWords, maxWords, k1,
        b);
    StringBuilder head = new StringBuilder();
    ByteArrayOutputStream body = new ByteArrayOutputStream(1 << 12);
    Set<String> unknown = new LinkedHashSet<>();
    for (String id : ids) {
      int found = lookup(id);
      appendSnippet(
          found < 0 ? null : snippets.snippet(store.text(docOrd[found]), q, unknown), head, body);
    }
    return finish(head, body, unknown);
  }

  private static String[] lines(String joined) {
    return joined.isEmpty() ? new String[0] : joined.split("\n", -1);
  }

  /** Document frequency of index terms in the doc view's text field. */
  public long[] docFreqs(String[] terms) throws IOException {
    long[] out = new long[terms.length];
    for (int i = 0; i < terms.length; i++) {
      out[i] = docReader.docFreq(new Term(TEXT, terms[i]));
    }
    return out;
  }

  @Override
  public void close() throws IOException {
    if (viewPool != null) {
      viewPool.shutdown();
    }
    docReader.close();
    passageReader.close();
    store.close();
  }
}
