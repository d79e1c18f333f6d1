"""Search: query parser, BM25 views, weighted RRF, snippets, backends, guard."""
