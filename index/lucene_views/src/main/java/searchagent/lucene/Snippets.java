package searchagent.lucene;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Query-focused snippets as search_agent/search/snippets.py's {@code make_snippet} cuts them, for
 * the documents of the Lucene backend: the same windows, excerpts and scores in the same
 * floating-point order, so the output is the same string. It covers the common case and declines
 * (returns null, the caller cuts the snippet in Python) where matching the Python code exactly
 * would need its regex engine: characters outside the BMP and texts whose lowercase copy is not
 * character for character (the Python code then matches with re.I). Where re.I matches a query
 * character to a text's through an extra case equivalent (i to ı, s to ſ), so does this class.
 * Quoted phrases count first, as there. Candidate words are analyzed by the caller (the Python
 * analyzer, so a word's term is tantivy's stem, not Lucene's Snowball revision's) and kept ({@link
 * #learn}): a document with a word not seen before is returned with its new words, analyzed,
 * learned and cut again. Corpus idf only. Thread-safe.
 */
final class Snippets {
  /** Marks a word that ends a line (snippets.py's _LINE_END). */
  static final char LINE_END = '\ue000';

  private static final Set<String> ABBREVIATIONS =
      Set.of(
          ("al approx b c ca capt cf co col corp d dr ed eds est fig fl ft gen hon"
                  + " ibid inc jr lit lt ltd mr mrs ms mt no op pp prof rev sgt sr st vol vs"
                  + " jan feb mar apr jun jul aug sep sept oct nov dec")
              .split(" "));

  /** The caller's analysis of candidate words: word -> its index term ("" for none). */
  private final ConcurrentHashMap<String, String> analyzed = new ConcurrentHashMap<>();
  private final int maxWords;

  /** @param maxWords how many analyzed words are kept (then new ones are asked for each time) */
  Snippets(int maxWords) {
    this.maxWords = maxWords;
  }

  /**
   * Keeps the caller's analysis of words: {@code words[i]}'s index term is {@code terms[i]} (""
   * where the analyzer drops the word).
   */
  void learn(String[] words, String[] terms) {
    if (words.length != terms.length) {
      throw new IllegalArgumentException(
          "one term per word: " + words.length + " words, " + terms.length + " terms");
    }
    for (int i = 0; i < words.length; i++) {
      if (analyzed.size() < maxWords || analyzed.containsKey(words[i])) {
        analyzed.put(words[i], terms[i]);
      }
    }
  }

  /**
   * One query's snippet settings and terms, the same for each of its documents: its index terms
   * in the BM25 sum's order (snippets.py's _query_terms) with their corpus idf, its quoted
   * phrases as lowercase letter/digit tokens (analysis.raw_tokens), the prefixes a
   * candidate word starts with (_prefixes), re.I's extra case equivalents of their characters (pairs
   * of a text character and the query character it also matches), the window and excerpt sizes
   * and BM25 k1, b.
   */
  static final class Query {
    final Map<String, Integer> slot = new HashMap<>();
    final double[] idf;
    final String[][] phrases;
    final String[] prefixes;
    /** Text character extraText[i] also matches query character extraQuery[i]. */
    final char[] extraText;
    final char[] extraQuery;
    final char minExtra;
    final int windowWords;
    final int maxWords;
    final double k1;
    final double b;

    Query(String[] terms, double[] idf, String[][] phrases, String[] prefixes, String extraCases,
        int windowWords, int maxWords, double k1, double b) {
      if (terms.length != idf.length) {
        throw new IllegalArgumentException(
            "one idf per term: " + terms.length + " terms, " + idf.length + " idf");
      }
      if (windowWords < 1 || maxWords < 1) {
        throw new IllegalArgumentException("window and excerpt sizes must be >= 1");
      }
      for (int i = 0; i < terms.length; i++) {
        if (terms[i].isEmpty()) {
          throw new IllegalArgumentException("query term " + i + " is empty");
        }
        slot.putIfAbsent(terms[i], i);
      }
      for (String[] phrase : phrases) {
        if (phrase.length == 0) {
          throw new IllegalArgumentException("a phrase without tokens");
        }
      }
      this.idf = idf;
      this.phrases = phrases;
      this.prefixes = prefixes;
      if (extraCases.length() % 2 != 0) {
        throw new IllegalArgumentException(
            "extra cases are pairs (text character, query character): " + extraCases);
      }
      int pairs = extraCases.length() / 2;
      extraText = new char[pairs];
      extraQuery = new char[pairs];
      char min = Character.MAX_VALUE;
      for (int i = 0; i < pairs; i++) {
        extraText[i] = extraCases.charAt(2 * i);
        extraQuery[i] = extraCases.charAt(2 * i + 1);
        min = (char) Math.min(min, extraText[i]);
      }
      this.minExtra = min;
      this.windowWords = windowWords;
      this.maxWords = maxWords;
      this.k1 = k1;
      this.b = b;
    }

    /** Whether lowercase text character {@code t} matches query character {@code c} (re.I). */
    boolean matches(char t, char c) {
      if (t == c) {
        return true;
      }
      if (t < minExtra) {
        return false;
      }
      for (int i = 0; i < extraText.length; i++) {
        if (extraText[i] == t && extraQuery[i] == c) {
          return true;
        }
      }
      return false;
    }

    /** Whether {@code t} is the text side of an extra case pair. */
    boolean isExtra(char t) {
      if (t < minExtra) {
        return false;
      }
      for (char x : extraText) {
        if (x == t) {
          return true;
        }
      }
      return false;
    }
  }

  /** Python's str.isspace (what str.split() splits on). */
  static boolean isSpace(char c) {
    return switch (c) {
      case '\t', '\n', '\u000b', '\f', '\r', '\u001c', '\u001d', '\u001e', '\u001f', ' ',
          '\u0085', '\u00a0', '\u1680', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000' -> true;
      default -> c >= '\u2000' && c <= '\u200a';
    };
  }

  /** Python's str.isalnum of one BMP character (re's [^\W_]). */
  static boolean isAlnum(char c) {
    if (c < 128) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    }
    return switch (Character.getType(c)) {
      case Character.UPPERCASE_LETTER, Character.LOWERCASE_LETTER, Character.TITLECASE_LETTER,
          Character.MODIFIER_LETTER, Character.OTHER_LETTER, Character.DECIMAL_DIGIT_NUMBER,
          Character.LETTER_NUMBER, Character.OTHER_NUMBER -> true;
      default -> false;
    };
  }

  /** re's [^\W\d_]: alphanumeric but not a decimal digit. */
  private static boolean isAlnumNotDigit(char c) {
    return isAlnum(c) && Character.getType(c) != Character.DECIMAL_DIGIT_NUMBER;
  }

  /**
   * A text's words (line ends marked) joined by single spaces, as characters, and where each word
   * starts.
   */
  private static final class Text {
    final char[] norm;
    final int length;
    final int[] starts;
    final int words;

    Text(char[] norm, int length, int[] starts, int words) {
      this.norm = norm;
      this.length = length;
      this.starts = starts;
      this.words = words;
    }

    /** One past the last character of word {@code w}. */
    int end(int w) {
      return w + 1 < words ? starts[w + 1] - 1 : length;
    }

    /** The word index of character {@code at}. */
    int wordAt(int at) {
      return bisectRight(starts, words, at) - 1;
    }
  }

  /** str.split() joined by single spaces; declined for characters outside the BMP. */
  private static Text split(String raw) throws Declined {
    if (raw.indexOf('\n') >= 0) {
      raw = markLineEnds(raw);
    }
    char[] src = raw.toCharArray();
    int n = src.length;
    char[] out = new char[n];
    int[] starts = new int[Math.max(4, n / 6)];
    int words = 0;
    int o = 0;
    int i = 0;
    while (true) {
      while (i < n && isSpace(src[i])) {
        i++;
      }
      if (i == n) {
        break;
      }
      if (words > 0) {
        out[o++] = ' ';
      }
      if (words == starts.length) {
        starts = Arrays.copyOf(starts, 2 * words);
      }
      starts[words++] = o;
      while (i < n && !isSpace(src[i])) {
        char c = src[i++];
        if (Character.isSurrogate(c)) {
          throw new Declined();
        }
        out[o++] = c;
      }
    }
    return new Text(out, o, starts, words);
  }

  /** snippets.py's _mark_line_ends. */
  private static String markLineEnds(String text) {
    String[] lines = text.split("\n", -1);
    StringBuilder out = new StringBuilder(text.length() + 16);
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i];
      if (i < lines.length - 1) {
        int end = line.length();
        while (end > 0 && " \t\r\f\u000b".indexOf(line.charAt(end - 1)) >= 0) {
          end--;
        }
        if (end > 0 && !isSpace(line.charAt(end - 1))) {
          line = line.substring(0, end) + LINE_END;
        }
      }
      if (i > 0) {
        out.append('\n');
      }
      out.append(line);
    }
    return out.toString();
  }

  /** What {@link #snippet} returns for a document with a word not analyzed yet (by identity). */
  static final String UNANALYZED = new String("(unanalyzed)");

  /** Thrown for a document with a word not analyzed yet. */
  private static final class Unanalyzed extends Declined {}

  /** Thrown where the Python code would take a path this class does not copy. */
  private static class Declined extends Exception {
    Declined() {
      super(null, null, false, false);
    }
  }

  /**
   * The snippet of {@code text}; null where the caller must cut it (see the class); {@link
   * #UNANALYZED} where a candidate word has not been analyzed yet: such words are added to {@code
   * unknown} (the caller analyzes them, {@link #learn}s them and asks again).
   */
  String snippet(String text, Query q, Set<String> unknown) {
    try {
      return cut(text, q, unknown);
    } catch (Unanalyzed u) {
      return UNANALYZED;
    } catch (Declined d) {
      return null;
    }
  }

  private String cut(String raw, Query q, Set<String> unknown) throws Declined {
    Text text = split(raw);
    if (text.words == 0) {
      return "";
    }
    char[] low = lowercase(text, q.idf.length + q.phrases.length, q);
    int[][] positions = positions(text, low, q, unknown);
    int[][] spans = phraseSpans(text, low, q);
    int[] ends = sentenceEnds(text);
    Scorer scorer = new Scorer(positions, spans, q);
    int budget = q.maxWords;
    int[][] sentences = sentences(ends);
    if (scorer.matches.length == 0) {
      int[] span = candidate(scorer, sentences, 0, budget);
      return join(text, span[0], span[1]);
    }
    int[] window = scorer.bestSpan(0, text.words, q.windowWords);
    // ends are the sentences' last words; snippets.py bisects their ends (last + 1).
    int first = bisectRight(ends, ends.length, window[0] - 1);
    int last = bisectLeft(ends, window[1] - 1);
    int n = last - first + 1;
    int[] los = new int[n];
    int[] his = new int[n];
    for (int i = 0; i < n; i++) {
      int[] span = candidate(scorer, sentences, first + i, budget);
      los[i] = span[0];
      his[i] = span[1];
    }
    Scored scores = scorer.scores(los, q.windowWords, his);
    int best = 0;
    int bestLead = 0;
    for (int i = 0; i < n; i++) {
      int match = scorer.firstMatch(los[i], his[i]);
      int lead = match >= 0 ? match - los[i] : budget;
      if (i == 0) {
        bestLead = lead;
        continue;
      }
      // Keys (phrases, BM25, -lead, -lo), the first maximum kept.
      int c = scores.compare(i, best);
      if (c > 0 || (c == 0 && (lead < bestLead || (lead == bestLead && los[i] < los[best])))) {
        best = i;
        bestLead = lead;
      }
    }
    int lo = los[best];
    int hi = his[best];
    // Phrases first: a phrase no run of whole sentences within budget holds is kept by cutting.
    if (spans.length > 0) {
      int[] cut = scorer.bestSpan(window[0], window[1], budget);
      if (scorer.phrasesIn(cut[0], cut[1]) > scorer.phrasesIn(lo, hi)) {
        lo = cut[0];
        hi = cut[1];
      }
    }
    return join(text, lo, hi);
  }

  /**
   * The lowercase copy of a text's words, or null when the query has no terms and no phrases
   * (nothing to find); declined where snippets.py matches with re.I in ways this class does not
   * copy: a Σ or an İ (its str.lower() is not one character for one), or an extra case equivalent
   * of the prefixes' or phrases' characters that is not a letter or digit (re.I would match it
   * where a word breaks). Elsewhere Character.toLowerCase is String.toLowerCase(Locale.ROOT) and
   * Python's str.lower(), and the lowercase copy matched through {@link Query#matches} finds what
   * re.I finds in the text.
   */
  private static char[] lowercase(Text text, int wanted, Query q) throws Declined {
    if (wanted == 0) {
      return null;
    }
    char[] norm = text.norm;
    char[] low = new char[text.length];
    for (int i = 0; i < text.length; i++) {
      char c = norm[i];
      char l;
      if (c < 128) {
        l = c >= 'A' && c <= 'Z' ? (char) (c + 32) : c;
      } else {
        if (c == '\u03a3' || c == '\u0130') {
          throw new Declined();
        }
        l = Character.toLowerCase(c);
      }
      if (l >= q.minExtra && q.isExtra(l) && !isAlnum(l)) {
        throw new Declined();
      }
      low[i] = l;
    }
    return low;
  }

  private interface Found {
    void accept(String run, int word) throws Declined;
  }

  /** Each candidate word (run) of {@code low} with its word index, in text order. */
  private static void scan(Text text, char[] low, Query q, Found found)
      throws Declined {
    if (low == null || q.prefixes.length == 0) {
      return;
    }
    int n = text.length;
    int word = 0;
    int i = 0;
    while (i < n) {
      char c = low[i];
      if (c == ' ') {
        word++;
        i++;
        continue;
      }
      if (!isAlnum(c)) {
        i++;
        continue;
      }
      int start = i;
      while (i < n && isAlnum(low[i])) {
        i++;
      }
      if (startsWithAny(low, start, i, q)) {
        found.accept(new String(low, start, i - start), word);
      }
    }
  }

  /** Word indexes of each query term, ascending (snippets.py's lowercase path of _analyze). */
  private int[][] positions(Text text, char[] low, Query q, Set<String> unknown)
      throws Declined {
    int terms = q.idf.length;
    int[][] found = new int[terms][];
    int[] sizes = new int[terms];
    boolean[] missing = {false};
    scan(text, terms == 0 ? null : low, q, (run, word) -> {
      String term = analyzed.get(run);
      if (term == null) {
        unknown.add(run);
        missing[0] = true;
        return;
      }
      Integer slot = q.slot.get(term);
      if (slot == null) {
        return;
      }
      int t = slot;
      if (found[t] == null) {
        found[t] = new int[4];
      } else if (sizes[t] == found[t].length) {
        found[t] = Arrays.copyOf(found[t], 2 * sizes[t]);
      }
      found[t][sizes[t]++] = word;
    });
    if (missing[0]) {
      throw new Unanalyzed();
    }
    int[][] out = new int[terms][];
    for (int t = 0; t < terms; t++) {
      out[t] = found[t] == null ? new int[0] : Arrays.copyOf(found[t], sizes[t]);
    }
    return out;
  }

  /**
   * (first, last) word of each occurrence of each phrase, sorted: its tokens in order, separated
   * by non-alphanumeric characters, not inside a longer run (snippets.py's _lower_bounded on the
   * lowercase copy; non-overlapping per phrase, as re.finditer).
   */
  private static int[][] phraseSpans(Text text, char[] low, Query q) {
    String[][] phrases = q.phrases;
    if (phrases.length == 0) {
      return new int[0][];
    }
    List<int[]> out = new ArrayList<>();
    for (String[] toks : phrases) {
      int from = 0;
      while (from < text.length) {
        int end = matchAt(low, text.length, from, toks, q);
        if (end < 0) {
          from++;
          continue;
        }
        out.add(new int[] {text.wordAt(from), text.wordAt(end - 1)});
        from = end;
      }
    }
    out.sort((a, b) -> a[0] != b[0] ? Integer.compare(a[0], b[0]) : Integer.compare(a[1], b[1]));
    return out.toArray(new int[0][]);
  }

  /** One past the phrase's last character when it matches at {@code start}, else -1. */
  private static int matchAt(char[] low, int n, int start, String[] toks, Query q) {
    if (!regionIs(low, start, n, toks[0], q)) {
      return -1;
    }
    if (start > 0 && isAlnum(low[start - 1])) {
      return -1;
    }
    int j = start + toks[0].length();
    for (int t = 1; t < toks.length; t++) {
      int sep = j;
      while (j < n && !isAlnum(low[j])) {
        j++;
      }
      if (j == sep || !regionIs(low, j, n, toks[t], q)) {
        return -1;
      }
      j += toks[t].length();
    }
    return j < n && isAlnum(low[j]) ? -1 : j;
  }

  /**
   * Whether {@code s} starts at {@code at} of the first {@code n} characters of {@code a}, each
   * character matched as re.I matches it ({@link Query#matches}).
   */
  private static boolean regionIs(char[] a, int at, int n, String s, Query q) {
    int len = s.length();
    if (at + len > n) {
      return false;
    }
    for (int k = 0; k < len; k++) {
      if (a[at + k] != s.charAt(k) && !q.matches(a[at + k], s.charAt(k))) {
        return false;
      }
    }
    return true;
  }

  private static boolean startsWithAny(char[] low, int at, int end, Query q) {
    for (String p : q.prefixes) {
      if (regionIs(low, at, end, p, q)) {
        return true;
      }
    }
    return false;
  }


  /** Word indexes that end a sentence, ascending, the last word always (_ends_in, whole text). */
  private static int[] sentenceEnds(Text text) {
    char[] norm = text.norm;
    int n = text.length;
    int last = text.words - 1;
    int[] ends = new int[16];
    int size = 0;
    int word = 0;
    for (int i = 0; i < n; i++) {
      char c = norm[i];
      if (c == ' ') {
        word++;
        continue;
      }
      boolean end;
      if (c == LINE_END) {
        end = true;
      } else if (c == '.' || c == '!' || c == '?') {
        int j = i + 1;
        while (j < n && (norm[j] == '"' || norm[j] == '\'' || norm[j] == ')' || norm[j] == ']')) {
          j++;
        }
        end = (j == n || norm[j] == ' ') && (c != '.' || periodEndsSentence(text, i));
      } else {
        end = false;
      }
      if (end && (size == 0 || ends[size - 1] != word)) {
        if (size == ends.length) {
          ends = Arrays.copyOf(ends, 2 * size);
        }
        ends[size++] = word;
      }
    }
    if (size == 0 || ends[size - 1] != last) {
      ends = Arrays.copyOf(ends, size + 1);
      ends[size++] = last;
    }
    return Arrays.copyOf(ends, size);
  }

  /** snippets.py's _period_ends_sentence. */
  private static boolean periodEndsSentence(Text text, int start) {
    char[] norm = text.norm;
    int at = start;
    while (at > 0 && norm[at - 1] != ' ') {
      at--;
    }
    while (at <= start && (norm[at] == '(' || norm[at] == '[' || norm[at] == '"' || norm[at] == '\'')) {
      at++;
    }
    String word = new String(norm, at, start + 1 - at).toLowerCase(Locale.ROOT);
    if (initialOrDotted(word)) {
      return false;
    }
    return !ABBREVIATIONS.contains(word.substring(0, word.length() - 1));
  }

  /** Whether {@code word} fully matches [^\W\d_]\.|(?:[^\W\d_]+\.){2,}. */
  private static boolean initialOrDotted(String word) {
    int groups = 0;
    int run = 0;
    for (int i = 0; i < word.length(); i++) {
      char c = word.charAt(i);
      if (c == '.') {
        if (run == 0) {
          return false;
        }
        if (groups == 0 && run == 1 && i == word.length() - 1) {
          return true;
        }
        groups++;
        run = 0;
      } else if (isAlnumNotDigit(c)) {
        run++;
      } else {
        return false;
      }
    }
    return run == 0 && groups >= 2;
  }

  /** [start, end) word spans of the sentences, from their last words. */
  private static int[][] sentences(int[] ends) {
    int[][] out = new int[ends.length][];
    int start = 0;
    for (int i = 0; i < ends.length; i++) {
      out[i] = new int[] {start, ends[i] + 1};
      start = ends[i] + 1;
    }
    return out;
  }

  /** snippets.py's _candidates for one sentence i. */
  private static int[] candidate(Scorer scorer, int[][] sentences, int i, int budget) {
    int s = sentences[i][0];
    int e = sentences[i][1];
    if (e - s > budget) {
      return scorer.bestSpan(s, e, budget);
    }
    int j = i;
    while (j + 1 < sentences.length && sentences[j + 1][1] - s <= budget) {
      j++;
      e = sentences[j][1];
    }
    int h = i;
    while (h > 0 && e - sentences[h - 1][0] <= budget) {
      h--;
      s = sentences[h][0];
    }
    return new int[] {s, e};
  }

  /** Words [lo, hi) joined by single spaces, line-end marks removed. */
  private static String join(Text text, int lo, int hi) {
    if (lo >= hi) {
      return "";
    }
    int from = text.starts[lo];
    int to = text.end(hi - 1);
    char[] out = new char[to - from];
    int o = 0;
    for (int i = from; i < to; i++) {
      if (text.norm[i] != LINE_END) {
        out[o++] = text.norm[i];
      }
    }
    return new String(out, 0, o);
  }

  /** Python's bisect_left over {@code a}. */
  static int bisectLeft(int[] a, int x) {
    int lo = 0;
    int hi = a.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (a[mid] < x) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /** Python's bisect_right over the first {@code n} elements of {@code a}. */
  static int bisectRight(int[] a, int n, int x) {
    int lo = 0;
    int hi = n;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (x < a[mid]) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }

  /** Scores of spans: phrases inside each, then BM25 (compared in that order). */
  private record Scored(int[] phrases, double[] bm25) {
    int compare(int i, int j) {
      int c = Integer.compare(phrases[i], phrases[j]);
      return c != 0 ? c : Double.compare(bm25[i], bm25[j]);
    }
  }

  /** snippets.py's _Scorer: BM25 (+ phrase count) of word spans from match positions. */
  private static final class Scorer {
    final int[] matches;
    final double[] idf;
    final int[][] positions;
    final int[][] spans;
    final Query q;

    Scorer(int[][] byTerm, int[][] spans, Query q) {
      this.q = q;
      this.spans = spans;
      int count = 0;
      int total = spans.length;
      for (int[] ps : byTerm) {
        if (ps.length > 0) {
          count++;
          total += ps.length;
        }
      }
      idf = new double[count];
      positions = new int[count][];
      int[] all = new int[total];
      int k = 0;
      int at = 0;
      for (int t = 0; t < byTerm.length; t++) {
        int[] ps = byTerm[t];
        if (ps.length > 0) {
          idf[k] = q.idf[t];
          positions[k++] = ps;
          System.arraycopy(ps, 0, all, at, ps.length);
          at += ps.length;
        }
      }
      for (int[] span : spans) {
        all[at++] = span[0];
      }
      matches = Arrays.stream(all).sorted().distinct().toArray();
    }

    int firstMatch(int lo, int hi) {
      int i = bisectLeft(matches, lo);
      return i < matches.length && matches[i] < hi ? matches[i] : -1;
    }

    /** Phrases wholly inside [start, end). */
    int phrasesIn(int start, int end) {
      int n = 0;
      for (int[] span : spans) {
        if (start <= span[0] && span[1] < end) {
          n++;
        }
      }
      return n;
    }

    /** Phrases and BM25 of [starts[i], ends[i]) each; BM25 normalized against {@code width}. */
    Scored scores(int[] starts, int width, int[] ends) {
      double norm = q.k1 * (1 - q.b + q.b * width / q.windowWords);
      double k1Plus1 = q.k1 + 1;
      double[] bm25 = new double[starts.length];
      int[] phrases = new int[starts.length];
      for (int i = 0; i < starts.length; i++) {
        double sum = 0.0;
        for (int t = 0; t < positions.length; t++) {
          int[] ps = positions[t];
          int tf = bisectLeft(ps, ends[i]) - bisectLeft(ps, starts[i]);
          if (tf != 0) {
            sum = sum + idf[t] * tf * k1Plus1 / (tf + norm);
          }
        }
        bm25[i] = sum;
        phrases[i] = spans.length == 0 ? 0 : phrasesIn(starts[i], ends[i]);
      }
      return new Scored(phrases, bm25);
    }

    /** The best {@code width}-word span inside [lo, hi), earliest on ties. */
    int[] bestSpan(int lo, int hi, int width) {
      if (hi - lo <= width) {
        return new int[] {lo, hi};
      }
      int[] starts = new int[1 + 2 * matches.length];
      int n = 0;
      starts[n++] = lo;
      for (int p : matches) {
        if (lo <= p && p < hi) {
          starts[n++] = Math.min(p, hi - width);
          starts[n++] = Math.max(lo, p - width + 1);
        }
      }
      starts = Arrays.stream(starts, 0, n).sorted().distinct().toArray();
      int[] ends = new int[starts.length];
      for (int i = 0; i < starts.length; i++) {
        ends[i] = starts[i] + width;
      }
      Scored scores = scores(starts, width, ends);
      int best = 0;
      for (int i = 1; i < starts.length; i++) {
        if (scores.compare(i, best) > 0) {
          best = i;
        }
      }
      return new int[] {starts[best], starts[best] + width};
    }
  }
}
