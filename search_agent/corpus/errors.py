"""The error corpus readers raise for unreadable or malformed input."""


class CorpusError(ValueError):
  """A corpus file is missing or malformed; the message names file and record."""
