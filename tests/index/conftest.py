"""Fixtures for the index binary tests: the search tests' OpenSearch node."""

from tests.search.conftest import opensearch_url

__all__ = ['opensearch_url']
