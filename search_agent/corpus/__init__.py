"""Corpora: normalized document records, readers, passages, link graphs."""
