"""A durable replay queue between rollout workers and the learner.

Contract (everything lives in files under one root directory):
  * work/<gid>.json    dispatched groups waiting for a worker. A worker
    claims one by renaming it to leased/<gid>@<worker>.json (atomic: one
    winner).
  * groups/<gid>.json  delivered, scored groups. A worker writes tmp/,
    fsyncs, then hard-links to groups/ (atomic; a second delivery of the
    same group fails the link and is dropped), then drops its lease.
  * consumed.jsonl     one fsynced line per optimizer update:
    {"update": u, "groups": [...], "dropped": [...]}; "dropped" holds the
    groups the learner took but excluded by dynamic sampling (settled, never
    offered again). A torn last line is ignored on open.
The root must be local (or NFS/Filestore): claims and deliveries rely on
POSIX rename and link, which object stores lack, so a gs:// root is refused
(paths.NotLocalError).
No group is lost: a crashed worker leaves at most a tmp file and a lease;
`release_worker` (or `expire_leases`) puts its claimed work back. No group is
used twice: delivery is link-once and consumption is journaled. The learner
commits update u BEFORE saving checkpoint u + 1; after a restart from
checkpoint s, `recover(checkpoint_step=s)` re-offers the groups of updates
>= s (taken-but-uncommitted groups are re-offered anyway).
"""

import json
import os
import pathlib
import time
from typing import Sequence
import uuid

from search_agent import paths
from search_agent.train.rl import rollout_groups


def _glob_escape(name: str) -> str:
  return ''.join(f'[{c}]' if c in '*?[' else c for c in name)


class ReplayQueueError(RuntimeError):
  """The queue's files contradict its contract; the message says which."""


def _fsync_dir(path: pathlib.Path) -> None:
  fd = os.open(path, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def _write_synced(path: pathlib.Path, data: str) -> None:
  with open(path, 'w', encoding='utf-8') as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())


class ReplayQueue:
  """File-backed queue; every process opens its own instance on `root`."""

  def __init__(self, root: str | os.PathLike[str]):
    self.root = pathlib.Path(
        paths.require_local(
            root,
            'the RL replay queue',
            'workers claim by atomic rename and deliver by hard link, which'
            ' object stores lack',
        )
    )
    for d in ('work', 'leased', 'groups', 'tmp'):
      (self.root / d).mkdir(parents=True, exist_ok=True)
    self.journal = self.root / 'consumed.jsonl'
    self._taken: set[str] = set()

  # -- dispatch side ------------------------------------------------------
  def enqueue(self, group_id: str, payload: dict) -> None:
    """Publishes one dispatched group for the workers."""
    tmp = self.root / 'tmp' / f'work-{uuid.uuid4().hex}'
    _write_synced(tmp, json.dumps({'group_id': group_id, **payload}))
    os.replace(tmp, self.root / 'work' / f'{group_id}.json')
    _fsync_dir(self.root / 'work')

  def claim(self, worker: str) -> dict | None:
    """Atomically takes one waiting work item for `worker` (None if none)."""
    for path in sorted((self.root / 'work').glob('*.json')):
      lease = self.root / 'leased' / f'{path.stem}@{worker}.json'
      try:
        # rename keeps the mtime, and `expire_leases` reads a lease's age
        # from it: stamp the claim time first, or a group that waited long
        # in work/ would be expired the moment it is claimed.
        os.utime(path)
        os.rename(path, lease)
      except FileNotFoundError:
        continue  # another worker won it
      return json.loads(lease.read_text(encoding='utf-8'))
    return None

  # -- worker side --------------------------------------------------------
  def deliver(self, group: rollout_groups.RolloutGroup, worker: str) -> bool:
    """Stores a scored group once; False if it was already delivered."""
    tmp = self.root / 'tmp' / f'{group.group_id}.{uuid.uuid4().hex}'
    _write_synced(tmp, json.dumps(group.to_json()))
    try:
      os.link(tmp, self.root / 'groups' / f'{group.group_id}.json')
      fresh = True
    except FileExistsError:
      fresh = False
    finally:
      os.unlink(tmp)
    _fsync_dir(self.root / 'groups')
    (self.root / 'leased' / f'{group.group_id}@{worker}.json').unlink(
        missing_ok=True
    )
    return fresh

  def release(self, group_id: str, worker: str) -> bool:
    """Puts one claim of `worker` back to work/ (a failed attempt)."""
    lease = self.root / 'leased' / f'{group_id}@{worker}.json'
    try:
      os.rename(lease, self.root / 'work' / f'{group_id}.json')
    except FileNotFoundError:
      return False
    return True

  def touch_leases(self, worker: str) -> int:
    """Heartbeat: refreshes the mtime of `worker`'s leases."""
    n = 0
    for lease in (self.root / 'leased').glob(f'*@{worker}.json'):
      try:
        os.utime(lease)
        n += 1
      except FileNotFoundError:
        pass
    return n

  def knows(self, group_id: str) -> bool:
    """Whether `group_id` is waiting, claimed or delivered."""
    name = f'{group_id}.json'
    return (
        (self.root / 'work' / name).exists()
        or (self.root / 'groups' / name).exists()
        or any((self.root / 'leased').glob(f'{_glob_escape(group_id)}@*.json'))
    )

  # -- recovery -----------------------------------------------------------
  def release_worker(self, worker: str) -> list[str]:
    """Returns a dead worker's undelivered claims to work/."""
    back = []
    for lease in (self.root / 'leased').glob(f'*@{worker}.json'):
      gid = lease.name[: -len(f'@{worker}.json')]
      if (self.root / 'groups' / f'{gid}.json').exists():
        lease.unlink()
      else:
        os.rename(lease, self.root / 'work' / f'{gid}.json')
        back.append(gid)
    return sorted(back)

  def expire_leases(self, max_age_s: float, now: float | None = None):
    """Releases leases older than `max_age_s` (workers that went silent)."""
    now = time.time() if now is None else now
    workers = {
        p.stem.rsplit('@', 1)[1]
        for p in (self.root / 'leased').glob('*.json')
        if now - p.stat().st_mtime > max_age_s
    }
    return sorted(g for w in workers for g in self.release_worker(w))

  def recover(self, checkpoint_step: int) -> list[str]:
    """Learner restart from checkpoint `checkpoint_step`.

    Drops journal entries of updates >= checkpoint_step (their gradients are
    not in the checkpoint) and any torn line; forgets uncommitted takes.
    Returns the re-offered group ids.
    """
    kept, rolled = [], []
    for entry in self._entries():
      (kept if entry['update'] < checkpoint_step else rolled).append(entry)
    tmp = self.root / 'tmp' / f'journal-{uuid.uuid4().hex}'
    _write_synced(tmp, ''.join(json.dumps(e) + '\n' for e in kept))
    os.replace(tmp, self.journal)
    _fsync_dir(self.root)
    self._taken.clear()
    return sorted(
        g for e in rolled for g in (*e['groups'], *e.get('dropped', ()))
    )

  def clean_tmp(self, max_age_s: float, now: float | None = None) -> int:
    """Deletes tmp files older than `max_age_s` (left by crashed writers)."""
    now = time.time() if now is None else now
    old = [
        p
        for p in (self.root / 'tmp').iterdir()
        if now - p.stat().st_mtime > max_age_s
    ]
    for p in old:
      p.unlink(missing_ok=True)
    return len(old)

  # -- learner side -------------------------------------------------------
  def _entries(self) -> list[dict]:
    if not self.journal.exists():
      return []
    lines = self.journal.read_text(encoding='utf-8').split('\n')
    out = []
    for i, line in enumerate(lines):
      if not line:
        continue
      try:
        out.append(json.loads(line))
      except json.JSONDecodeError as e:
        if i < len(lines) - 1:  # only an unterminated last line may be torn
          raise ReplayQueueError(f'{self.journal}:{i + 1} is corrupt') from e
    return out

  def consumed(self) -> dict[str, int]:
    """Group id -> update that used it, from the journal."""
    out = {}
    for e in self._entries():
      for g in e['groups']:
        if g in out:
          raise ReplayQueueError(f'group {g} journaled in two updates')
        out[g] = e['update']
    return out

  def dropped(self) -> set[str]:
    """Groups journaled as excluded by dynamic sampling."""
    return {g for e in self._entries() for g in e.get('dropped', ())}

  def _available(self) -> list[pathlib.Path]:
    used = self.consumed().keys() | self.dropped() | self._taken
    return sorted(
        (
            p
            for p in (self.root / 'groups').glob('*.json')
            if p.stem not in used
        ),
        key=lambda p: (p.stat().st_mtime_ns, p.name),
    )

  def ready_count(self) -> int:
    """Delivered groups neither consumed nor taken."""
    return len(self._available())

  def take(self, max_groups: int) -> list[rollout_groups.RolloutGroup]:
    """Up to `max_groups` delivered groups not consumed nor taken yet."""
    paths = self._available()[:max_groups]
    groups = [
        rollout_groups.RolloutGroup.from_json(json.loads(p.read_text('utf-8')))
        for p in paths
    ]
    self._taken.update(g.group_id for g in groups)
    return groups

  def load(self, group_ids: Sequence[str]) -> list[rollout_groups.RolloutGroup]:
    """The delivered groups `group_ids`, in that order (nothing is taken).

    The other processes of a multi-host learner read the groups process 0
    took, by the ids it broadcast.

    Raises:
      ReplayQueueError: One of them was never delivered.
    """
    out = []
    for gid in group_ids:
      path = self.root / 'groups' / f'{gid}.json'
      try:
        text = path.read_text('utf-8')
      except FileNotFoundError as e:
        raise ReplayQueueError(f'group {gid} is not delivered ({path})') from e
      out.append(rollout_groups.RolloutGroup.from_json(json.loads(text)))
    return out

  def _cut_torn_tail(self) -> None:
    if not self.journal.exists():
      return
    data = self.journal.read_bytes()
    if data and not data.endswith(b'\n'):
      with open(self.journal, 'r+b') as f:
        f.truncate(data.rfind(b'\n') + 1)
        os.fsync(f.fileno())

  def commit(
      self, update: int, group_ids: Sequence[str], dropped: Sequence[str] = ()
  ) -> None:
    """Journals that `update` used `group_ids` (call before checkpointing).

    `dropped` are groups taken for it but excluded by dynamic sampling.
    """
    used = self.consumed().keys() | self.dropped()
    twice = [g for g in (*group_ids, *dropped) if g in used]
    if twice:
      raise ReplayQueueError(f'groups {twice} were already used')
    entry = {'update': update, 'groups': list(group_ids)}
    if dropped:
      entry['dropped'] = list(dropped)
    self._cut_torn_tail()
    with open(self.journal, 'a', encoding='utf-8') as f:
      f.write(json.dumps(entry) + '\n')
      f.flush()
      os.fsync(f.fileno())
    self._taken.difference_update((*group_ids, *dropped))
