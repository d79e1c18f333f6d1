package searchagent.lucene;

import java.util.Arrays;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.FilteringTokenFilter;
import org.apache.lucene.analysis.LowerCaseFilter;
import org.apache.lucene.analysis.StopFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.snowball.SnowballFilter;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.util.CharTokenizer;
import org.apache.lucene.util.UnicodeUtil;
import org.tartarus.snowball.ext.EnglishStemmer;

/**
 * The project's English analysis (search_agent/search/analysis.py) in Lucene:
 * maximal runs of letters/digits, tokens of 40+ UTF-8 bytes dropped,
 * lowercased, Lucene's English stopwords removed (position gaps kept), the
 * Snowball English (Porter2) stemmer.
 */
final class EnglishAnalysis {
  static final int MAX_TOKEN_BYTES = 40;
  static final CharArraySet STOPWORDS =
      CharArraySet.unmodifiableSet(
          new CharArraySet(
              Arrays.asList(
                  "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
                  "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
                  "their", "then", "there", "these", "they", "this", "to", "was", "will",
                  "with"),
              false));

  private EnglishAnalysis() {}

  /** Drops tokens of MAX_TOKEN_BYTES or more UTF-8 bytes (tantivy remove_long). */
  private static final class RemoveLong extends FilteringTokenFilter {
    private final CharTermAttribute term = addAttribute(CharTermAttribute.class);

    RemoveLong(TokenStream in) {
      super(in);
    }

    @Override
    protected boolean accept() {
      return UnicodeUtil.calcUTF16toUTF8Length(term, 0, term.length()) < MAX_TOKEN_BYTES;
    }
  }

  static Analyzer analyzer(boolean stem, boolean removeStopwords) {
    return new Analyzer() {
      @Override
      protected TokenStreamComponents createComponents(String field) {
        Tokenizer source =
            new CharTokenizer(TokenStream.DEFAULT_TOKEN_ATTRIBUTE_FACTORY, 1024 * 1024) {
              @Override
              protected boolean isTokenChar(int c) {
                return Character.isLetterOrDigit(c);
              }
            };
        TokenStream s = new LowerCaseFilter(new RemoveLong(source));
        if (removeStopwords) {
          s = new StopFilter(s, STOPWORDS);
        }
        if (stem) {
          s = new SnowballFilter(s, new EnglishStemmer());
        }
        return new TokenStreamComponents(source, s);
      }
    };
  }
}
