"""SearchMaster self-play as a training mode of the RL loop (`selfplay.*`).

The task pool holds seed documents (selfplay/seeds.py); one dispatched
group is one seed. `SelfPlayWorker` plays the seed on the rollout policy
(selfplay/seed_round.py: Proposer rollouts, filters, Solver rollouts,
Verifier, rewards) and delivers ONE replay group holding the seed's two
GRPO groups, Proposer rollouts first (`meta.selfplay.split` = their sizes);
a seed failing the gate is delivered empty (the learner drops it and
refills the slot). `SelfPlayLoop` splits such groups back into their two
GRPO groups for advantages (each normalized on its own) and adds the
iteration's self-play metrics (selfplay/stats.py) to each update's
metrics.jsonl row, with per role the GRPO groups trained and those with a
non-zero advantage (`role_groups`, `role_groups_with_advantage`). Passing tasks are appended to
<workdir>/selfplay/tasks.jsonl (Task JSONL), seed summaries to
<workdir>/selfplay/seeds_played.jsonl; the curves to <workdir>/selfplay_curves.png.
"""

import asyncio
import dataclasses
import functools
import json
import os
from typing import Any
import uuid

from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.chat import chat_prompts
from search_agent.corpus import sources
from search_agent.llm import registry
from search_agent.model import families
from search_agent.model import sampler as sampler_lib
from search_agent.search import schemas as tool_schemas
from search_agent.selfplay import demonstrations as demos_lib
from search_agent.selfplay import filters as filters_lib
from search_agent.selfplay import plots
from search_agent.selfplay import proposal as proposal_lib
from search_agent.selfplay import seed_round
from search_agent.selfplay import seeds as seeds_lib
from search_agent.selfplay import stats
from search_agent.selfplay import toolbox as toolbox_lib
from search_agent.selfplay import verifier as verifier_lib
from search_agent.train.rl import advantages as adv_lib
from search_agent.train.rl import config as config_lib
from search_agent.train.rl import frozen_verifier
from search_agent.train.rl import job as job_lib
from search_agent.train.rl import loop as loop_lib
from search_agent.train.rl import rollout_groups
from search_agent.train.rl import rollout_worker
from search_agent.train.rl import token_exact
from search_agent.train.rl import weight_sync

# selfplay.verifier.kind of the in-process frozen initial model.
FROZEN = 'frozen'


class SelfPlayConfigError(ValueError):
  """The self-play config asks for something not built (says what)."""


def enabled(c) -> bool:
  return 'selfplay' in c and bool(c.selfplay.enabled)


def prepare(c, workdir: str):
  """The config with `tasks_path` = the seed pool (built once when absent)."""
  if not enabled(c):
    return c
  s = c.selfplay
  path = s.seeds_path or os.path.join(workdir, 'selfplay', 'seeds.jsonl')
  if not os.path.exists(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    spec = sources.CorpusSpec(kind=s.corpus_kind, path=s.corpus_path,
                              derive_links=False)  # fmt: skip
    picked = seeds_lib.sample_seeds(spec, s.num_seeds, s.seed, s.min_seed_chars)
    tmp = f'{path}.{uuid.uuid4().hex}'
    seeds_lib.write_tasks(tmp, picked)
    os.replace(tmp, path)
  out = c.copy_and_resolve_references()
  out.tasks_path = path
  return out


def selfplay_config(c) -> seed_round.SelfPlayConfig:
  s = c.selfplay
  return seed_round.SelfPlayConfig(
      k_proposer=s.k_proposer, k_solver=s.k_solver, ecg=s.ecg,
      difficulty=s.difficulty, oop=s.oop, seed_gate=s.seed_gate,
      seed_chars=s.seed_chars,
      filters=filters_lib.FilterConfig(**s.filters.to_dict()),
      rewards=config_lib.searchmaster_rewards(c),
  )  # fmt: skip


def proposer_setup(c) -> demos_lib.DemoSetup:
  """The Proposer role as the run prompts it (system prompt, agent config
  with its step budget, seed length, filters, rewards), for demonstrations
  and probes of it (selfplay/demonstrations.py)."""
  sp = selfplay_config(c)
  tools_text = react.tool_text(
      tool_schemas.tool_schemas(tuple(c.search.tools)), c.rollout.tool_text
  )
  agent = job_lib.agent_config(c)
  budgets = dataclasses.replace(
      agent.budgets, max_steps=c.selfplay.proposer_max_steps
  )
  return demos_lib.DemoSetup(
      proposer_system=proposal_lib.proposer_system(sp.ecg, tools_text),
      agent_cfg=dataclasses.replace(agent, budgets=budgets),
      seed_chars=sp.seed_chars,
      filters=sp.filters,
      rewards=sp.rewards,
  )


def build_verifier(c, *, workdir: str = '', devices=None, tok=None):
  """`selfplay.verifier.kind`: 'programmatic' (stand-in), 'llm' (an
  endpoint) or 'frozen' (the initial model in process, frozen_verifier.py:
  needs the worker's workdir, devices and tokenizer)."""
  v = c.selfplay.verifier
  if v.kind == verifier_lib.PROGRAMMATIC:
    return verifier_lib.ProgrammaticVerifier()
  if v.kind == FROZEN:
    if devices is None or tok is None:
      raise SelfPlayConfigError(
          "selfplay.verifier.kind='frozen' runs in the rollout worker"
          ' (its devices and tokenizer)'
      )
    llm = frozen_verifier_llm(c, workdir, devices, tok)
  elif v.kind == 'llm':
    llm = registry.build(registry.from_dict(v.llm.to_dict()))
  else:
    raise SelfPlayConfigError(
        f'selfplay.verifier.kind {v.kind!r}: use programmatic, llm or frozen'
    )
  return verifier_lib.LLMVerifier(
      llm, max_tokens=v.max_tokens, trace_chars=v.trace_chars
  )


def frozen_verifier_llm(c, workdir: str, devices, tok):
  """The seed's frozen Verifier: the initial model on its own sampler
  beside the rollout policy's (frozen_verifier.py)."""
  v = c.selfplay.verifier

  def make_sampler():
    return sampler_lib.Sampler(
        job_lib.model_config(c),
        families.layout_preset(c.sampler.layout),
        batch_size=c.sampler.batch_size,
        max_prompt_len=c.sampler.max_prompt_len,
        max_new_tokens=v.max_tokens,
        devices=devices,
    )

  return frozen_verifier.FrozenInitialLLM(
      make_sampler,
      chat_prompts.RendererPrompts(tok, c.tokenizer.chat_template),
      weight_sync.WeightStore(os.path.join(workdir, 'weights')),
      os.path.join(workdir, 'selfplay', 'verifier'),
      timeout_s=c.learner.stall_timeout_s,
  )


def judge_manifest(c, sp_cfg=None) -> dict[str, Any]:
  v = c.selfplay.verifier
  if v.kind == 'llm':
    out = {
        'name': 'llm',
        'llm': registry.from_dict(v.llm.to_dict()).manifest(),
    }
  elif v.kind == FROZEN:
    out = {
        'name': FROZEN,
        'note': (
            "the initial model (the learner's version 0, copied to"
            ' selfplay/verifier/0) on its own in-process sampler, never'
            ' updated'
        ),
    }
  else:
    out = dict(build_verifier(c).manifest)
  out['selfplay'] = dataclasses.asdict(sp_cfg or selfplay_config(c))
  return out


def worker_factory(c, workdir: str, agent_cfg, *, devices=None, tok=None):
  """RolloutWorker's constructor with the self-play pieces bound (`devices`
  and `tok`: the worker's, for the frozen Verifier)."""
  s, sp = c.selfplay, selfplay_config(c)
  tools_text = react.tool_text(
      tool_schemas.tool_schemas(tuple(c.search.tools)), c.rollout.tool_text
  )
  if c.rollout.partial:
    raise SelfPlayConfigError(
        'selfplay does not support rollout.partial (set it False)'
    )
  steps = lambda n: dataclasses.replace(  # pylint: disable=g-long-lambda
      agent_cfg, budgets=dataclasses.replace(agent_cfg.budgets, max_steps=n)
  )
  return functools.partial(
      SelfPlayWorker, sp=sp,
      verifier=build_verifier(c, workdir=workdir, devices=devices, tok=tok),
      proposer_system=proposal_lib.proposer_system(sp.ecg, tools_text),
      role_agent_cfgs={'proposer': steps(s.proposer_max_steps),
                       'solver': steps(s.solver_max_steps)},
      out_dir=os.path.join(workdir, 'selfplay'),
      manifest=judge_manifest(c, sp),
      max_tool_calls=s.max_tool_calls,
  )  # fmt: skip


class _Manifest:

  def __init__(self, manifest):
    self.manifest = manifest


class SelfPlayWorker(rollout_worker.RolloutWorker):
  """A rollout worker whose work items are seeds (see the module doc)."""

  def __init__(self, *args, sp, verifier, proposer_system, role_agent_cfgs,
               out_dir, manifest, max_tool_calls=200,
               **kwargs):  # fmt: skip
    super().__init__(*args, **kwargs)
    self.max_tool_calls = max_tool_calls
    self.sp, self.verifier = sp, verifier
    self.proposer_system, self.role_agent_cfgs = (
        proposer_system,
        role_agent_cfgs,
    )
    self.scorer = _Manifest(manifest)  # the run manifest's 'judge'
    os.makedirs(out_dir, exist_ok=True)
    self.tasks_path = os.path.join(out_dir, 'tasks.jsonl')
    self.seeds_path = os.path.join(out_dir, 'seeds_played.jsonl')
    self._out_lock = asyncio.Lock()

  async def _role_rollout(self, seed_task, role, traj_id, system, user):
    llm = token_exact.RecordingLLM(self.policy)
    cfg = dataclasses.replace(
        self.role_agent_cfgs[role], seed=rollout_worker._seed(traj_id, 0)  # pylint: disable=protected-access
    )
    traj = await react.ReActAgent(llm, cfg).run(
        traj_id=traj_id, task_id=seed_task.id, question=user,
        system_prompt=system,
        toolbox=toolbox_lib.CappedToolbox(
            self.toolbox_factory(seed_task), self.max_tool_calls
        ),
        meta={'role': role},
    )  # fmt: skip
    if traj.status == 'failed':
      raise rollout_worker.RolloutError(f'rollout {traj_id}: {traj.error}')
    out = token_exact.routed(traj, llm.calls)
    if isinstance(out, str):
      return traj, False
    return out, True

  async def run_group(
      self, item: dict[str, Any]
  ) -> rollout_groups.RolloutGroup:
    seed = task_lib.Task.from_json(item['task'])
    gid = item['group_id']
    run = functools.partial(self._role_rollout, seed)
    out = await seed_round.play_seed(
        dataclasses.replace(seed, id=gid), run, self.verifier, self.sp,
        proposer_system=self.proposer_system, solver_system=self.system_text,
    )  # fmt: skip
    summary = stats.seed_summary(out)
    summary['seed_task'] = seed.id
    await self._write(out, summary)
    prop, sol = [], []
    if out.retained:
      prop = [p for p in out.proposer if p.usable]
      sol = [p for p in out.solver_group if p.usable]
    trajs = tuple(
        rollout_groups.ScoredTrajectory(
            trajectory_id=p.traj.id, segments=p.traj.segments,
            reward=p.reward,
            correct=float(p.correct),
        )
        for p in prop + sol
    )  # fmt: skip
    return rollout_groups.RolloutGroup(
        group_id=gid, task_id=seed.id, dispatch_batch=int(item['batch']),
        trajectories=trajs,
        meta={'worker': self.cfg.worker_id, 'pass': item.get('pass', 0),
              'selfplay': {'split': [len(prop), len(sol)],
                           'summary': summary}},
    )  # fmt: skip

  async def _write(self, out: seed_round.SeedOutcome, summary) -> None:
    lines = [json.dumps(t.to_json()) + '\n' for t in out.tasks]
    rolls = list(out.proposer) + [p for g in out.solvers.values() for p in g]
    async with self._out_lock:
      await asyncio.to_thread(_append, self.tasks_path, lines)
      await asyncio.to_thread(
          _append, self.seeds_path, [json.dumps(summary) + '\n']
      )
      if self.rollouts_path is not None:
        kept = [dataclasses.replace(
            token_exact.unrouted(p.traj),
            meta={**p.traj.meta, 'group_id': summary['seed'],
                  'reward': {'total': p.reward, 'base': p.base,
                             'correct': p.correct}},
        ) for p in rolls if p.traj.segments]  # fmt: skip
        await asyncio.to_thread(
            _append, self.rollouts_path,
            [json.dumps(t.to_json()) + '\n' for t in kept],
        )  # fmt: skip


def _append(path, lines) -> None:
  with open(path, 'a', encoding='utf-8') as f:
    f.writelines(lines)


def split_group(
    group: rollout_groups.RolloutGroup,
) -> list[rollout_groups.RolloutGroup]:
  """A self-play replay group's GRPO groups (>= 2 rollouts each)."""
  split = group.meta.get('selfplay', {}).get('split')
  if split is None:
    return [group] if len(group.trajectories) >= 2 else []
  n_p = split[0]
  parts = (('proposer', group.trajectories[:n_p]),
           ('solver', group.trajectories[n_p:]))  # fmt: skip
  return [
      dataclasses.replace(group, group_id=f'{group.group_id}/{r}',
                          trajectories=t)
      for r, t in parts if len(t) >= 2
  ]  # fmt: skip


ROLES = ('proposer', 'solver')


def role_signal(groups, adv_cfg) -> dict[str, Any]:
  """Per role, the GRPO groups an update trained and those of them with a
  non-zero advantage (`split_group`'s parts, named '<seed>/<role>')."""
  used = {r: 0 for r in ROLES}
  signal = {r: 0 for r in ROLES}
  for g in groups:
    role = g.group_id.rsplit('/', 1)[-1]
    if role not in used:
      continue
    used[role] += 1
    signal[role] += adv_lib.group_has_signal(g.rewards, adv_cfg)
  return {'role_groups': used, 'role_groups_with_advantage': signal}


class _SelfPlayMetrics:
  """Adds the iteration's self-play metrics to each update's record."""

  def __init__(self, inner):
    self.inner, self.seeds, self.roles = inner, [], {}

  def write(self, record) -> None:
    rec = {**record, **stats.iteration_metrics(self.seeds), **self.roles}
    self.seeds, self.roles = [], {}
    self.inner.write(rec)
    path = getattr(self.inner, 'path', None)  # RLMetricsWriter's file
    if path is not None:
      plots.plot(path, os.path.join(os.path.dirname(path), plots.PLOT))

  def close(self) -> None:
    self.inner.close()


class SelfPlayLoop(loop_lib.LearnerLoop):
  """The learner loop over seed groups (see the module docstring)."""

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    if self.metrics is not None:  # process 0 writes the metrics
      self.metrics = _SelfPlayMetrics(self.metrics)

  def _signal(self, group) -> bool:
    summary = group.meta.get('selfplay', {}).get('summary')
    if summary is not None:
      self.metrics.seeds.append(summary)
    parts = split_group(group)
    if not parts:
      return False
    if not self.cfg.dynamic_sampling:
      return True
    return any(
        adv_lib.group_has_signal(p.rewards, self.cfg.advantages) for p in parts
    )

  def _chunk(self, acc, groups) -> None:
    super()._chunk(acc, self._advantage_groups(groups))

  def _advantage_groups(self, groups):
    return [p for g in groups for p in split_group(g)]

  def _finish_update(self, groups, m, gnorm, busy, t0) -> None:
    if self.metrics is not None:
      self.metrics.roles = role_signal(
          self._advantage_groups(groups), self.cfg.advantages
      )
    super()._finish_update(groups, m, gnorm, busy, t0)
