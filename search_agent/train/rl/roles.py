"""The RL binary's roles: learner, rollout worker, or both in one process.

`learner` and `rollout` share only the workdir (replay queue, weight
versions, tokenizer, index), as on separate slices; `all` runs the rollout
worker in a thread with its own event loop, its sampler on the other half
of the devices, and stops it when the learner is done (a dead worker thread
stops the learner with its error).

On a pod the learner is one JAX program over its slice's hosts (process 0
writes the shared files, loop.py); rollout workers never join one: each
host runs its own worker on its local devices, named after the host
(`worker_id`) unless the config names it. docs/pods-rl.md.
"""

import asyncio
import contextlib
import dataclasses
import json
import logging as std_logging
import os
import pathlib
import threading
import time
from typing import Any, Iterator

from absl import logging
import jax

from search_agent import digests
from search_agent import distributed
from search_agent.chat import chat_prompts
from search_agent.llm import registry
from search_agent.llm import sampler_client
from search_agent.llm import server_client
from search_agent.model import families
from search_agent.model import sampler as sampler_lib
from search_agent.search import client as client_lib
from search_agent.search import engine as engine_lib
from search_agent.search import locations
from search_agent.search import tools as tools_lib
from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train.rl import job as job_lib
from search_agent.train.rl import local_servers
from search_agent.train.rl import loop as loop_lib
from search_agent.train.rl import partial
from search_agent.train.rl import replay_queue
from search_agent.train.rl import rollout_worker
from search_agent.train.rl import selfplay
from search_agent.train.rl import server_policy
from search_agent.train.rl import task_pool
from search_agent.train.rl import used_rollouts
from search_agent.train.rl import weight_sync

ROLES = ('all', 'learner', 'rollout')


def _paths(workdir: str) -> dict[str, str]:
  return {
      'queue': os.path.join(workdir, 'queue'),
      'weights': os.path.join(workdir, 'weights'),
      'checkpoints': os.path.join(workdir, 'checkpoints'),
  }


def worker_id(c, role: str) -> str:
  """The rollout worker's name: `rollout.worker_id`, else one per host.

  An unset id is 'w0' for the worker inside `--role=all` and, for
  `--role=rollout`, 's<slice>-h<host>' from the environment a pod's hosts get
  (MEGASCALE_SLICE_ID, TPU_WORKER_ID: `distributed.host_id()`, read without
  joining the hosts into one program).
  """
  if c.rollout.worker_id:
    return c.rollout.worker_id
  if role == 'all':
    return 'w0'
  return distributed.host_id()


def with_worker_id(c, role: str):
  """A copy of `c` with `rollout.worker_id` resolved (see worker_id)."""
  out = c.copy_and_resolve_references()
  out.rollout.worker_id = worker_id(c, role)
  return out


def write_manifest(c, workdir: str, role: str, extra: dict[str, Any]) -> None:
  task_sha = digests.file_sha256(c.tasks_path)
  manifest = {
      'role': role,
      'config': c.to_dict(),
      'tasks': {'path': c.tasks_path, 'sha256': task_sha},
      'devices': [str(d) for d in jax.devices()],
      **extra,
  }
  name = 'manifest.json' if role != 'rollout' else (
      f'manifest-rollout-{c.rollout.worker_id}.json'
  )  # fmt: skip
  tmp = os.path.join(workdir, name + '.tmp')
  with open(tmp, 'w', encoding='utf-8') as f:
    json.dump(manifest, f, indent=1, default=str)
  os.replace(tmp, os.path.join(workdir, name))


def build_learner(c, workdir: str, devices, check_alive=lambda: None):
  model = job_lib.learner_model(c, devices)
  distributed.barrier('rl-learner-model-built')  # orbax syncs next
  ckpt = checkpoint_lib.Checkpointer(
      _paths(workdir)['checkpoints'],
      checkpoint_lib.CheckpointConfig(
          every=c.learner.checkpoint_every, keep=c.learner.checkpoint_keep
      ),
  )
  loop_cls = selfplay.SelfPlayLoop if selfplay.enabled(c) else (
      loop_lib.LearnerLoop
  )  # fmt: skip
  return loop_cls(
      job_lib.loop_config(c),
      model=model,
      tx=job_lib.optimizer(c, model),
      tasks=task_pool.TaskPool(job_lib.load_tasks(c), seed=c.task_seed),
      queue=replay_queue.ReplayQueue(_paths(workdir)['queue']),
      weights=weight_sync.WeightStore(
          _paths(workdir)['weights'], keep=c.weights.keep
      ),
      ckpt=ckpt,
      workdir=workdir,
      check_alive=check_alive,
  )


def policy_for(c, workdir: str, devices, tok) -> tuple[Any, Any]:
  """(LLM, weight sync) of `rollout.policy` (see server_policy.py)."""
  store = weight_sync.WeightStore(_paths(workdir)['weights'])
  prompts = chat_prompts.RendererPrompts(tok, c.tokenizer.chat_template)
  kind = c.rollout.policy
  if kind == 'server':
    std_logging.getLogger('httpx').setLevel(std_logging.WARNING)  # per call
    urls = tuple(c.rollout.server_urls)
    llm = server_policy.RoutedServerLLM(
        server_client.ServerConfig(base_urls=urls, routed_experts=True),
        prompts,
    )
    sync = server_policy.ServerWeightSync(store, urls)
    return server_policy.SyncedServerLLM(llm, sync), sync
  if kind == 'openai':
    return _openai_policy(c, store)
  if kind != 'in_process':
    raise job_lib.RLSetupError(
        f'rollout.policy {kind!r}: use one of {server_policy.POLICIES}'
    )
  cfg = dataclasses.replace(
      job_lib.model_config(c),
      max_target_length=c.sampler.max_prompt_len + c.sampler.max_new_tokens,
  )
  sampler = sampler_lib.Sampler(
      cfg,
      families.layout_preset(c.sampler.layout),
      batch_size=c.sampler.batch_size,
      max_prompt_len=c.sampler.max_prompt_len,
      max_new_tokens=c.sampler.max_new_tokens,
      devices=devices,
  )
  synced = weight_sync.SyncedSampler(sampler, store)
  return sampler_client.SamplerLLM(synced, prompts), synced


def _openai_policy(c, store: weight_sync.WeightStore) -> tuple[Any, Any]:
  """The 'openai' policy: role 'policy' of the registry, token ids and
  logprobs asked for; weights pushed to the endpoint's root when
  `rollout.openai_push_weights` (server_policy.py)."""
  if c.parity.require_routing:
    raise job_lib.RLSetupError(
        "rollout.policy='openai' returns no routing record: set"
        ' parity.require_routing=False (the learner routes those rows'
        ' afresh and counts them as unrouted_rows)'
    )
  section = dict(c.rollout.openai, logprobs=True, return_token_ids=True)
  cfg = registry.from_dict({'kind': 'openai', 'name': 'policy',
                            'openai': section})  # fmt: skip
  llm = registry.build_role(cfg, 'policy')
  if not c.rollout.openai_push_weights:
    return server_policy.StampedLLM(llm, store), server_policy.NoSync()
  root = server_policy.server_root(c.rollout.openai.base_url)
  sync = server_policy.ServerWeightSync(store, (root,))
  return server_policy.SyncedServerLLM(llm, sync), sync


def _partial(c, workdir: str) -> dict[str, Any]:
  """The worker's interrupt gate and abort call (Iris partial rollouts)."""
  if not c.rollout.partial:
    return {}
  store = weight_sync.WeightStore(_paths(workdir)['weights'])
  abort = None
  if c.rollout.policy == 'server':
    abort = server_policy.abort_fn(tuple(c.rollout.server_urls))
  return {'gate': partial.InterruptGate(workdir, store), 'abort': abort}


@contextlib.contextmanager
def rollout_worker_for(c, workdir: str, devices) -> Iterator[Any]:
  """A RolloutWorker on `devices`, its policy synced to the weights dir."""
  tok = job_lib.tokenizer(c, workdir)
  llm, synced = policy_for(c, workdir, devices, tok)
  index = job_lib.index_dir(c, workdir)
  words = c.search.snippet_words
  engine = (
      locations.open_engine(index, engine_lib.snippet_words_config(words))
      if index
      else None
  )
  if words and not engine:
    raise ValueError(
        f"search.snippet_words={words} shortens the embedded engine's"
        f' excerpts; search.url={c.search.url!r} serves its own: set it to 0'
    )
  backend = engine or client_lib.HttpSearch(c.search.url)
  tb_cfg = job_lib.toolbox_config(c)
  make = rollout_worker.RolloutWorker
  if selfplay.enabled(c):  # SearchMaster self-play: seeds, two roles
    make = selfplay.worker_factory(
        c, workdir, job_lib.agent_config(c), devices=devices, tok=tok
    )
  worker = make(
      job_lib.worker_config(c),
      policy=llm,
      agent_cfg=job_lib.agent_config(c),
      toolbox_factory=lambda task: tools_lib.Toolbox(
          backend, config=tb_cfg, context=task.question
      ),
      system_text=job_lib.system_text(c),
      scorer=job_lib.scorer(c),
      queue=replay_queue.ReplayQueue(_paths(workdir)['queue']),
      errors_path=os.path.join(workdir, 'rollout_errors.jsonl'),
      rollouts_path=os.path.join(
          workdir, f'rollouts-{c.rollout.worker_id}.jsonl'
      ),
      **_partial(c, workdir),
  )
  worker.synced = synced
  try:
    yield worker
  finally:
    if engine is not None:
      engine.close()


def _mtime(path: pathlib.Path) -> int | None:
  try:
    return path.stat().st_mtime_ns
  except FileNotFoundError:
    return None


async def _serve(
    worker, stop: threading.Event, weights_timeout_s: float, workdir: str
):
  """Serves until `stop`, or until the learner says it is done.

  A done file already there when the worker starts belongs to a finished
  run the learner is about to continue (it removes the file at start and
  writes it again at the end): only a new one stops the worker.
  """
  done = pathlib.Path(loop_lib.done_path(workdir))
  stale = _mtime(done)

  async def watch():
    nonlocal stale
    while not stop.is_set():
      seen = _mtime(done)
      if seen is not None and seen != stale:
        logging.info('the learner is done; the rollout worker stops')
        stop.set()
      elif seen is None:
        stale = None
      await asyncio.sleep(1.0)

  watcher = asyncio.create_task(watch())
  await asyncio.to_thread(
      worker.synced.wait_for_weights, weights_timeout_s, time.sleep
  )
  await worker.serve(stop)
  watcher.cancel()


def run_rollout(c, workdir: str, stop: threading.Event | None = None) -> None:
  """Serves groups until `stop` or the learner's done file (then exits)."""
  stop = stop or threading.Event()
  c = with_worker_id(c, 'rollout')
  logging.info('rollout worker %s on %d local devices', c.rollout.worker_id,
               jax.local_device_count())  # fmt: skip
  with (
      local_servers.started(c, workdir) as c,
      rollout_worker_for(c, workdir, jax.devices()) as worker,
  ):
    write_manifest(c, workdir, 'rollout', {'judge': worker.scorer.manifest})
    asyncio.run(_serve(worker, stop, c.learner.stall_timeout_s, workdir))


def _after(c, workdir: str) -> None:
  if c.climbing.enabled and distributed.is_writer():
    out = used_rollouts.handoff(workdir, job_lib.climb_config(c))
    logging.info('SFT-RL climbing: %s', out)


def run_learner(c, workdir: str) -> int:
  loop = build_learner(c, workdir, jax.devices())
  if distributed.is_writer():
    judge = (selfplay.judge_manifest(c) if selfplay.enabled(c)
             else job_lib.scorer(c).manifest)  # fmt: skip
    write_manifest(c, workdir, 'learner', {
        'judge': judge, 'processes': jax.process_count(),
        'topology': dataclasses.asdict(distributed.topology()),
    })  # fmt: skip
  version = loop.run()
  _after(c, workdir)
  return version


def run_all(c, workdir: str) -> int:
  """Learner and one rollout worker in this process on split meshes."""
  distributed.require_one_process(
      'rl.run --role=all (a learner and a rollout worker in one process)'
  )
  c = with_worker_id(c, 'all')
  l_dev, s_dev = job_lib.split_devices(c, 'all')
  stop, failure = threading.Event(), []
  with (
      local_servers.started(c, workdir) as c,
      rollout_worker_for(c, workdir, s_dev) as worker,
  ):

    def serve():
      try:
        asyncio.run(_serve(worker, stop, c.learner.stall_timeout_s, workdir))
      except BaseException as e:  # pylint: disable=broad-exception-caught
        failure.append(e)  # re-raised in the learner's thread

    def check_alive():
      if failure:
        raise RuntimeError(f'the rollout worker died: {failure[0]!r}') from (
            failure[0]
        )

    # A rerun with a larger max_updates: the finished run's marker would stop
    # the worker before the learner clears it (the learner rewrites it when
    # it is really done).
    pathlib.Path(loop_lib.done_path(workdir)).unlink(missing_ok=True)
    thread = threading.Thread(target=serve, name='rollout', daemon=True)
    thread.start()
    try:
      loop = build_learner(c, workdir, l_dev, check_alive)
      write_manifest(
          c, workdir, 'all',
          {'judge': worker.scorer.manifest,
           'learner_devices': [str(d) for d in l_dev],
           'sampler_devices': [str(d) for d in s_dev]},
      )  # fmt: skip
      version = loop.run()
    finally:
      stop.set()
      thread.join(timeout=60)
    logging.info('sampler loaded versions %s', worker.synced.loads)
  _after(c, workdir)
  return version
