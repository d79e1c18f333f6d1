package searchagent.lucene;

import java.util.Arrays;
import java.util.Collection;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.search.Collector;
import org.apache.lucene.search.CollectorManager;
import org.apache.lucene.search.LeafCollector;
import org.apache.lucene.search.Scorable;
import org.apache.lucene.search.ScoreMode;

/**
 * The passage view's parents collected directly: each parent document scores as its best
 * passage, and the top {@code k} parents are kept, ranked by that passage's (score desc, passage
 * doc asc) as the overfetching search ranks them (top passages, first occurrence of each parent).
 *
 * <p>Once {@code k} parents are held, the k-th best parent score is the minimum competitive score:
 * a passage below it can neither bring in a new parent nor raise one already held (a held parent
 * scores at least that much), so block-max pruning skips it. Exact, and unlike overfetching it
 * never searches twice. One collector per search (single-threaded searcher).
 */
final class BestPassageParents
    implements CollectorManager<BestPassageParents.Top, int[]> {
  private final int[] parentOf;
  private final int k;

  /**
   * @param parentOf the parent document ordinal of each passage (global passage doc id)
   * @param k how many parents to keep
   */
  BestPassageParents(int[] parentOf, int k) {
    this.parentOf = parentOf;
    this.k = k;
  }

  @Override
  public Top newCollector() {
    return new Top(parentOf, k);
  }

  @Override
  public int[] reduce(Collection<Top> collectors) {
    if (collectors.size() != 1) {
      throw new IllegalStateException("BestPassageParents needs a single-threaded searcher");
    }
    return collectors.iterator().next().ranked();
  }

  /** The held parents: slot arrays of size k and parent to slot. */
  static final class Top implements Collector {
    private final int[] parentOf;
    private final int k;
    private final int[] parents;
    private final float[] scores;
    private final int[] docs;
    private final SlotMap slotOf;
    private int size;
    private int minSlot;

    Top(int[] parentOf, int k) {
      this.parentOf = parentOf;
      this.k = k;
      parents = new int[k];
      scores = new float[k];
      docs = new int[k];
      slotOf = new SlotMap(k);
    }

    @Override
    public ScoreMode scoreMode() {
      return ScoreMode.TOP_SCORES;
    }

    /** True when (score, doc) ranks below slot i's best passage. */
    private boolean worse(float score, int doc, int i) {
      return score < scores[i] || (score == scores[i] && doc > docs[i]);
    }

    private void findMin() {
      int m = 0;
      for (int i = 1; i < size; i++) {
        if (worse(scores[i], docs[i], m)) {
          m = i;
        }
      }
      minSlot = m;
    }

    @Override
    public LeafCollector getLeafCollector(LeafReaderContext context) {
      final int base = context.docBase;
      return new LeafCollector() {
        private Scorable scorer;

        @Override
        public void setScorer(Scorable s) throws java.io.IOException {
          scorer = s;
          if (size == k) {
            scorer.setMinCompetitiveScore(scores[minSlot]);
          }
        }

        @Override
        public void collect(int doc) throws java.io.IOException {
          float score = scorer.score();
          int global = base + doc;
          if (size == k && worse(score, global, minSlot)) {
            return;
          }
          int parent = parentOf[global];
          int held = slotOf.get(parent);
          if (held >= 0) {
            if (worse(score, global, held)) {
              return;
            }
            scores[held] = score;
            docs[held] = global;
          } else if (size < k) {
            slotOf.put(parent, size);
            parents[size] = parent;
            scores[size] = score;
            docs[size] = global;
            size++;
          } else {
            slotOf.remove(parents[minSlot]);
            slotOf.put(parent, minSlot);
            parents[minSlot] = parent;
            scores[minSlot] = score;
            docs[minSlot] = global;
          }
          if (size == k) {
            findMin();
            scorer.setMinCompetitiveScore(scores[minSlot]);
          }
        }
      };
    }

    /** The held parents, best first. */
    int[] ranked() {
      Integer[] order = new Integer[size];
      for (int i = 0; i < size; i++) {
        order[i] = i;
      }
      Arrays.sort(
          order, (a, b) -> worse(scores[a], docs[a], b) ? 1 : worse(scores[b], docs[b], a) ? -1 : 0);
      int[] out = new int[size];
      for (int i = 0; i < size; i++) {
        out[i] = parents[order[i]];
      }
      return out;
    }
  }

  /**
   * Parent to slot, for at most {@code k} parents: open addressing on int keys with linear
   * probing and backward-shift deletion (no boxing; the passage view asks it once per competitive
   * passage).
   */
  static final class SlotMap {
    private static final int EMPTY = -1;
    private final int[] keys;
    private final int[] values;
    private final int mask;

    SlotMap(int k) {
      int capacity = Integer.highestOneBit(Math.max(4, 4 * k) - 1) << 1;
      keys = new int[capacity];
      values = new int[capacity];
      mask = capacity - 1;
      Arrays.fill(keys, EMPTY);
    }

    private int home(int key) {
      return (key * 0x9E3779B9) >>> 7 & mask;
    }

    /** The slot of {@code key} (a parent ordinal, >= 0), or -1. */
    int get(int key) {
      for (int i = home(key); ; i = (i + 1) & mask) {
        if (keys[i] == key) {
          return values[i];
        }
        if (keys[i] == EMPTY) {
          return -1;
        }
      }
    }

    void put(int key, int value) {
      int i = home(key);
      while (keys[i] != EMPTY && keys[i] != key) {
        i = (i + 1) & mask;
      }
      keys[i] = key;
      values[i] = value;
    }

    void remove(int key) {
      int i = home(key);
      while (keys[i] != key) {
        if (keys[i] == EMPTY) {
          return;
        }
        i = (i + 1) & mask;
      }
      // Shift back later entries of the run whose home is not between the hole and them.
      for (int j = (i + 1) & mask; keys[j] != EMPTY; j = (j + 1) & mask) {
        int h = home(keys[j]);
        if (((j - h) & mask) >= ((j - i) & mask)) {
          keys[i] = keys[j];
          values[i] = values[j];
          i = j;
        }
      }
      keys[i] = EMPTY;
    }
  }
}
