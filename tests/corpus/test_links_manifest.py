"""Tests for title-mention links and build manifests."""

from search_agent.corpus import links
from search_agent.corpus import manifest
from search_agent.corpus import twowiki
from search_agent.corpus.record import Document


def _doc(title, text=''):
  return Document(
      doc_id=twowiki.wiki_slug(title),
      title=title,
      url=twowiki.wiki_url(title),
      text=text,
  )


def test_mentions_longest_first_and_skips():
  docs = [
      _doc('Lothair II', 'King Lothair II married Teutberga of Arles.'),
      _doc('Teutberga', 'Queen, wife of Lothair II of Lotharingia.'),
      _doc('Lothair', 'A name.'),  # single word >= 5 chars: a target
      _doc('Run', 'Short single word: never a target.'),
      _doc('Arles (city)', 'The city.'),  # mention key 'Arles'
      _doc('Paris (film)', 'x'),
      _doc('Paris (city)', 'y'),  # ambiguous key 'Paris': skipped
      _doc('Mentions', 'Run to Paris and Arles; Lothair and Lothair II.'),
  ]
  out, note = links.derive_links(docs)
  by_id = {d.doc_id: d.links for d in out}
  assert by_id['Lothair_II'] == ('Teutberga', 'Arles_(city)')  # no self-link
  assert by_id['Teutberga'] == ('Lothair_II',)
  assert by_id['Mentions'] == ('Arles_(city)', 'Lothair', 'Lothair_II')
  assert '3 titles not used' in note  # Run, Paris (film), Paris (city)


def test_bundled_corpus_link_counts():
  out, note = links.derive_links(twowiki.read_2wiki())
  assert '2940 links over 6119 documents' in note
  by_id = {d.doc_id: d for d in out}
  assert by_id['Teutberga'].links == ('Lothair_II',)


def test_hash_is_order_and_content_sensitive(tmp_path):
  a, b = _doc('A', 'x'), _doc('B', 'y')
  h1, h2, h3 = (manifest.CorpusHasher() for _ in range(3))
  for h, docs in ((h1, [a, b]), (h2, [b, a]), (h3, [a, b])):
    for d in docs:
      h.update(d)
  assert h1.hexdigest() == h3.hexdigest() != h2.hexdigest()
  m = manifest.BuildManifest(
      backend='tantivy',
      corpus={'kind': '2wiki'},
      content_sha256=h1.hexdigest(),
      counts={'doc': 2, 'passage': 2, 'title': 2},
      config={'passage_window_words': 128},
      build_seconds=0.5,
      docs_per_second=4.0,
      links_note='none',
      created_utc='2026-11-30T00:00:00Z',
  )
  m.write(tmp_path)
  assert manifest.BuildManifest.read(tmp_path) == m
