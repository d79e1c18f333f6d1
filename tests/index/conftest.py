"""Fixtures for the index binary tests: the search tests' cluster nodes."""

from tests.search.conftest import cluster
from tests.search.conftest import elasticsearch_url
from tests.search.conftest import opensearch_url

__all__ = ['cluster', 'elasticsearch_url', 'opensearch_url']
