package searchagent.elasticsearch;

import java.util.Locale;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.en.EnglishMinimalStemFilter;
import org.apache.lucene.analysis.en.EnglishPossessiveFilter;
import org.apache.lucene.analysis.en.KStemFilter;
import org.apache.lucene.analysis.en.PorterStemFilter;
import org.apache.lucene.analysis.miscellaneous.LengthFilter;
import org.apache.lucene.analysis.pattern.PatternTokenizer;
import org.apache.lucene.analysis.snowball.SnowballFilter;
import org.elasticsearch.index.analysis.AbstractIndexAnalyzerProvider;
import org.elasticsearch.index.analysis.AbstractTokenFilterFactory;
import org.elasticsearch.index.analysis.AnalyzerProvider;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;
import org.tartarus.snowball.ext.EnglishStemmer;

/**
 * The parts of the stock analysis-common module (not on Maven Central) that
 * the project's index settings (search_agent/search/es_bodies.py) use, rebuilt
 * on lucene-analysis-common, which the server jar already depends on.
 *
 * <p>Tokenizer {@code pattern} (split mode only: {@code pattern}, {@code
 * group}); token filters {@code length}, {@code snowball}, {@code porter_stem}
 * and {@code stemmer} (english, porter, porter2, light_english, kstem,
 * minimal_english, possessive_english); analyzer {@code english} (Lucene's
 * EnglishAnalyzer; its stopwords and stem_exclusion options are ignored).
 * {@code stop} and {@code lowercase} come with the server.
 */
public class EnglishAnalysisPlugin extends Plugin implements AnalysisPlugin {

  private static TokenFilterFactory filter(String name, UnaryOperator<TokenStream> f) {
    return new AbstractTokenFilterFactory(name) {
      @Override
      public TokenStream create(TokenStream in) {
        return f.apply(in);
      }
    };
  }

  @Override
  public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
    return Map.of(
        "pattern",
        (idx, env, name, s) -> {
          Pattern pattern = Pattern.compile(s.get("pattern", "\\W+"));
          int group = s.getAsInt("group", -1);
          return new TokenizerFactory() {
            @Override
            public String name() {
              return name;
            }

            @Override
            public Tokenizer create() {
              return new PatternTokenizer(pattern, group);
            }
          };
        });
  }

  @Override
  public Map<String, AnalysisProvider<TokenFilterFactory>> getTokenFilters() {
    return Map.of(
        "length",
        (idx, env, name, s) -> {
          int min = s.getAsInt("min", 0);
          int max = s.getAsInt("max", Integer.MAX_VALUE);
          return filter(name, in -> new LengthFilter(in, min, max));
        },
        "porter_stem",
        (idx, env, name, s) -> filter(name, PorterStemFilter::new),
        "snowball",
        (idx, env, name, s) -> {
          String lang = s.get("language", "English");
          if (lang.equalsIgnoreCase("english")) {
            return filter(name, in -> new SnowballFilter(in, new EnglishStemmer()));
          }
          return filter(name, in -> new SnowballFilter(in, lang));
        },
        "stemmer",
        (idx, env, name, s) -> {
          String lang = s.get("language", s.get("name", "english")).toLowerCase(Locale.ROOT);
          return switch (lang) {
            case "english", "porter" -> filter(name, PorterStemFilter::new);
            case "porter2" -> filter(name, in -> new SnowballFilter(in, new EnglishStemmer()));
            case "light_english", "kstem" -> filter(name, KStemFilter::new);
            case "minimal_english" -> filter(name, EnglishMinimalStemFilter::new);
            case "possessive_english" -> filter(name, EnglishPossessiveFilter::new);
            default ->
                throw new IllegalArgumentException(
                    "stemmer language [" + lang + "] is not supported by this node");
          };
        });
  }

  @Override
  public Map<String, AnalysisProvider<AnalyzerProvider<? extends Analyzer>>> getAnalyzers() {
    return Map.of(
        "english",
        (idx, env, name, s) ->
            new AbstractIndexAnalyzerProvider<EnglishAnalyzer>(name) {
              private final EnglishAnalyzer analyzer = new EnglishAnalyzer();

              @Override
              public EnglishAnalyzer get() {
                return analyzer;
              }
            });
  }
}
