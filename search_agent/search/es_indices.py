"""Index lifecycle on a cluster: room for replicas, finishing a load, green,
aliases.

Each build writes its own indices (`physical_names`: the prefix's names plus
a build id) and searches go through aliases named `<prefix>-doc` and
`<prefix>-passage`; a finished build swaps them atomically
(`swap_aliases`), so a rebuild replaces the serving index only once it is
complete and green.

A load runs with no replica and no refresh (`es_bodies.create_index_body`):
every document is written once, not once per copy. `finish_load` then
optionally force-merges, raises the replicas (copied from the merged
primaries), turns refresh back on and waits until every copy is active
(green), so the build returns only when a node may be lost without losing
a shard.
"""

import logging
import time
from typing import Sequence

from search_agent.search import es_bodies
from search_agent.search.backend import BackendError
from search_agent.search.es_client import SearchClient


def data_nodes(client: SearchClient) -> int:
  """How many data nodes the cluster has."""
  health = client.call('health', client.raw.cluster.health)
  return int(health['number_of_data_nodes'])


def check_room_for_replicas(client: SearchClient, replicas: int) -> None:
  """BackendError unless the cluster can hold every copy (green needs a
  node per copy of a shard)."""
  nodes = data_nodes(client)
  if replicas + 1 > nodes:
    raise BackendError(
        f'{replicas} replica(s) need at least {replicas + 1} data nodes, and'
        f' the cluster at {", ".join(client.config.hosts)} has {nodes}; lower'
        ' index.replicas or add nodes'
    )


def wait_green(
    client: SearchClient, names: Sequence[str], timeout_s: float
) -> None:
  """Waits until every shard copy of `names` is active.

  Raises:
    BackendError: not green within `timeout_s`.
  """
  deadline = time.monotonic() + timeout_s
  wait = max(1, min(20, int(client.config.request_timeout_s) - 5))
  query = {
      'wait_for_status': 'green',
      'wait_for_no_initializing_shards': 'true',
      'timeout': f'{wait}s',
  }
  # A wait that times out is answered 408 (with the health as its body).
  if client.config.flavor == 'opensearch':
    health_fn = client.raw.cluster.health
    # Without request_timeout, opensearch-py takes `timeout` for its own.
    query.update(request_timeout=wait + 10, ignore=408)
  else:
    health_fn = client.raw.options(ignore_status=408).cluster.health
  while True:
    health = client.call('health', health_fn, index=','.join(names), **query)
    health = dict(health.body if hasattr(health, 'body') else health)
    if health['status'] == 'green' and not health['timed_out']:
      return
    if time.monotonic() >= deadline:
      raise BackendError(
          f'{", ".join(names)} not green after {timeout_s:.0f} s (status'
          f' {health["status"]}, {health["unassigned_shards"]} unassigned,'
          f' {health["initializing_shards"]} initializing shards); check the'
          ' nodes (GET _cluster/allocation/explain)'
      )


def force_merge(
    client: SearchClient, names: Sequence[str], segments: int
) -> None:
  """Merges each shard of `names` down to `segments` segments (fewer,
  larger segments search faster; only worth it on a finished index)."""
  t0 = time.monotonic()
  hour = 3600.0
  if client.config.flavor == 'elasticsearch':
    raw = client.raw.options(request_timeout=hour)
    client.call(
        'force merge',
        raw.indices.forcemerge,
        index=','.join(names),
        max_num_segments=segments,
    )
  else:
    client.call(
        'force merge',
        client.raw.indices.forcemerge,
        index=','.join(names),
        max_num_segments=segments,
        request_timeout=hour,
    )
  logging.info(
      'force-merged %s to %d segment(s) in %.1f s',
      ', '.join(names),
      segments,
      time.monotonic() - t0,
  )


def finish_load(
    client: SearchClient,
    names: Sequence[str],
    *,
    replicas: int,
    green_timeout_s: float,
    merge_segments: int = 0,
) -> None:
  """Force-merges (if `merge_segments`), raises replicas, refreshes, waits
  for green."""
  indices = client.raw.indices
  if merge_segments:
    force_merge(client, names, merge_segments)
  for name in names:
    client.call(
        'settings',
        indices.put_settings,
        index=name,
        body={
            'index': {
                'refresh_interval': '1s',
                'number_of_replicas': replicas,
            }
        },
    )
    client.call('refresh', indices.refresh, index=name)
  wait_green(client, names, green_timeout_s)


def physical_names(prefix: str, build_id: str) -> dict[str, str]:
  """The indices one build writes: {'doc': '<prefix>-doc-<build_id>', ...};
  `es_bodies.index_names(prefix)` are the aliases searches use."""
  return {
      kind: f'{name}-{build_id}'
      for kind, name in es_bodies.index_names(prefix).items()
  }


def serving(client: SearchClient, prefix: str) -> dict[str, list[str]]:
  """Per kind, the indices its alias points at now: [] if none, the index
  itself if a build from before aliases made one of that name."""
  raw = client.raw
  out = {}
  for kind, name in es_bodies.index_names(prefix).items():
    if client.call('exists', raw.indices.exists, index=name):
      out[kind] = sorted(client.call('get', raw.indices.get, index=name))
    else:
      out[kind] = []
  return out


def swap_aliases(
    client: SearchClient,
    prefix: str,
    new: dict[str, str],
    old: dict[str, list[str]],
) -> None:
  """Points each kind's alias at `new[kind]` and deletes the `old` indices,
  in one atomic `_aliases` call: a search sees the old build or the new
  one, never neither. An old index named like the alias (built before
  aliases) is deleted first."""
  raw = client.raw
  aliases = es_bodies.index_names(prefix)
  actions: list[dict] = []
  for kind, alias in aliases.items():
    for index in old.get(kind, []):
      if index == alias:
        logging.info('deleting %s (an index, not an alias) first', index)
        client.call('delete index', raw.indices.delete, index=index)
      else:
        actions.append({'remove_index': {'index': index}})
    actions.append({'add': {'index': new[kind], 'alias': alias}})
  client.call('aliases', raw.indices.update_aliases, body={'actions': actions})
