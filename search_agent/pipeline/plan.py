"""The stages of tpu_configs/pipeline.py, wired by placeholders.

Every stage is a `stages.Stage`: a binary with its config and overrides.
`{NAME}` in a value is the workdir of stage NAME, so the wiring below is also
the dependency graph (see stages.py). The environment section is applied to
collection, every eval and RL alike (environment.py), so the model is
trained and scored on the same prompt and observations; the optional stage
families are declared in families.py.
"""

import dataclasses
import functools
import os
from typing import Any, Callable, Mapping

from search_agent import digests
from search_agent.pipeline import base_model
from search_agent.pipeline import environment
from search_agent.pipeline import families
from search_agent.pipeline import stages as stages_lib

Stage = stages_lib.Stage
# The stage binaries that take the environment (environment.SPELLINGS).
COLLECT = 'search_agent.pipeline.collect'
EVAL = 'eval.run'
FILTER = 'search_agent.filtering.run'
RL = 'search_agent.train.rl.run'
SFT = 'search_agent.train.sft'
BUNDLED_CORPUS = 'search_agent/corpus/data/2wikimultihopqa_corpus.json'
EVALS = {
    'eval_before_sft': 'before_sft',
    'eval_after_sft': 'after_sft',
    'eval_after_rl': 'after_rl',
    'eval_after_climb': 'after_climb',
}
# Held-out phrasings (`phrasing_evals`): each held-out page evaluation and
# the one of the same checkpoint on the held-out tasks asked again in
# phrasings no training task used; the report gives both the first one's
# label.
PHRASING_EVALS = {
    'eval_after_sft': 'eval_phrasings_after_sft',
    'eval_after_rl': 'eval_phrasings_after_rl',
}


class PlanError(ValueError):
  """The pipeline config names an unknown stage or source."""


def _extra(entries) -> dict[str, str]:
  """('key=value', ...) -> {key: value}."""
  out = {}
  for entry in entries:
    key, sep, value = str(entry).partition('=')
    if not sep or not key:
      raise PlanError(f'override {entry!r} is not key=value')
    out[key.strip()] = value.strip()
  return out


def env_of(c) -> environment.Environment:
  """The environment of every stage: the config's one `env` section.

  Collection, filtering, SFT, every eval and RL get it as
  `settings(module)`, spelled where each binary takes it
  (environment.SPELLINGS), so they see one prompt format; the plan never
  reads another binary's config to decide it.
  """
  e = c.env
  return environment.Environment(
      index_dir='{index}/index',
      tools=tuple(e.tools),
      top_k=e.top_k,
      snippet_words=e.snippet_words,
      system_prompt=e.system_prompt,
      tool_text=e.tool_text,
      keep_observations=e.get('keep_observations', 0),
  )


SEARCH_BACKENDS = ('tantivy', 'elasticsearch', 'opensearch')


def _index(c) -> Stage:
  """index.build; on a cluster (search.backend) the stages that search
  open it through the location it leaves in {index}/index."""
  s = c.search
  if s.backend not in SEARCH_BACKENDS:
    raise PlanError(f'search.backend {s.backend!r}: use {SEARCH_BACKENDS}')
  overrides: dict[str, Any] = {'progress': False}
  if s.backend != 'tantivy':  # only then: earlier runs' index stays reusable
    overrides.update(
        {
            'backend': 'opensearch',
            'opensearch.cluster.flavor': s.backend,
            'opensearch.cluster.hosts': tuple(s.hosts),
            'opensearch.index.prefix': s.prefix,
            'opensearch.index.shards': s.shards,
            'opensearch.index.replicas': s.replicas,
            'overwrite': True,  # a rerun of the stage swaps the aliases
        }
    )
  return Stage(
      name='index',
      module='index.build',
      config='tpu_configs/search/build.py',
      overrides=overrides,
  )


def _tasks(c) -> Stage:
  t = c.tasks
  return Stage(
      name='tasks',
      module='search_agent.synthesis.run',
      config=t.synthesis_config,
      # Only when set: earlier runs' tasks stage stays reusable.
      overrides={
          'heldout_phrasings': t.heldout_phrasings,
          **({'rl_fraction': t.rl_fraction} if t.rl_fraction else {}),
          **({'controller.keep_lookups': True} if t.keep_lookups else {}),
      },
  )


def _import_base(c, name: str, part: str) -> Stage:
  """The tokenizer or pretrain stage as an import of the base c.base.path
  (its hashes checked); the manifest's sha256 is in the stage's hash."""
  path = c.base.path
  manifest = os.path.join(path, base_model.MANIFEST_FILE)
  if not os.path.isfile(manifest):
    raise PlanError(f'base.path {path!r} holds no {base_model.MANIFEST_FILE}')
  if part == 'params':
    _check_base_dims(c, base_model.read_manifest(path))
  return Stage(
      name=name,
      module='search_agent.pipeline.import_base',
      flags={
          'base': path,
          'part': part,
          'manifest_sha256': digests.file_sha256(manifest, missing_ok=True),
      },
  )


def _check_base_dims(c, manifest: dict) -> None:
  """The model sizes of c.model.dims are the base's."""
  made = manifest.get('stages', {}).get('pretrain', {}).get('fingerprint', {})
  prefix = 'model.dims.'
  base = {
      k[len(prefix) :]: v
      for k, v in made.get('overrides', {}).items()
      if k.startswith(prefix)
  }
  want = _extra(c.model.dims)
  if base != want:
    raise PlanError(
        f'base.path {c.base.path!r} was pretrained with model sizes {base};'
        f" model.dims gives {want}: set --config.model.dims to the base's"
    )


def _tokenizer(c) -> Stage:
  if c.base.path:
    return _import_base(c, 'tokenizer', 'tokenizer')
  return Stage(
      name='tokenizer',
      module='search_agent.pipeline.train_tokenizer',
      flags={'vocab_size': c.tokenizer.vocab_size},
  )


def _pretrain(c) -> Stage:
  if c.base.path:
    return _import_base(c, 'pretrain', 'params')
  p = c.pretrain
  return Stage(
      name='pretrain',
      module=SFT,
      config=p.config,
      overrides={
          'tokenizer_path': '{tokenizer}',
          # The bundled copy of the corpus (a fresh checkout has no
          # ../shared/data).
          'data.train_path': BUNDLED_CORPUS,
          'data.val_path': BUNDLED_CORPUS,
          'tokenizer_corpus': BUNDLED_CORPUS,
          'total_updates': p.updates,
          'schedule.total_steps': p.updates,
          'schedule.warmup_steps': p.warmup,
          'schedule.kind': p.schedule,
          'schedule.decay_steps': p.decay,
          'data.synthetic_fraction': p.synthetic_fraction,
          'data.synthetic_kinds': tuple(p.synthetic_kinds),
          'checkpoint.every': max(1, p.updates // 2),
          'eval_every': max(1, p.updates // 4),
          **_extra(p.extra),
      },
  )


def _collect(c) -> Stage:
  t, env = c.teacher, env_of(c)
  flags = {
      'tasks': '{tasks}/tasks.train.jsonl',
      'limit': c.tasks.max_train,
      **env.settings(COLLECT),
      'rollouts': t.rollouts,
      'max_steps': t.max_steps,
      'teacher': t.kind,
      'visit': t.visit,
      'recovery_rate': t.recovery_rate,
      'think': t.think,
      'quote_rate': t.quote_rate,
      'value_space': t.value_space,
  }
  if t.name_relation:  # only when on: earlier runs' collect stays reusable
    flags['name_relation'] = True
  if t.question_query:  # likewise
    flags['question_query'] = True
  if t.visit_when != 'always':  # likewise
    flags['visit_when'] = t.visit_when
  if t.kind == 'openai':
    flags.update(teacher_base_url=t.base_url, teacher_model=t.model)
  return Stage(name='collect', module=COLLECT, flags=flags)


def _filter(c) -> Stage:
  return Stage(
      name='filter',
      module=FILTER,
      config=c.filter.config,
      overrides={
          'input_path': '{collect}/trajectories.jsonl',
          'tasks_path': '{tasks}/tasks.train.jsonl',
          'judge': c.filter.judge,
          **env_of(c).settings(FILTER),
      },
  )


def _split(c) -> Stage:
  return Stage(
      name='split',
      module='search_agent.pipeline.split',
      # The section holds the binary's flags as they are.
      flags={'input': '{filter}/filtered.jsonl', **c.split},
  )


def _sft(c) -> Stage:
  s = c.sft
  init = _extra(s.init) if 'pretrain' in c.stages else {}
  return _sft_stage(
      c, 'sft', '{split}/train.jsonl', s.updates, {**init, **_extra(s.extra)}
  )


def _climb_sft(c) -> Stage:
  """train.sft from the RL checkpoint on climb_data, at a constant step."""
  m = c.climb
  lr = m.sft_learning_rate
  return _sft_stage(
      c,
      'climb_sft',
      '{climb_data}/train.jsonl',
      m.sft_updates,
      {
          'init_from': '{rl}',
          'schedule.kind': 'constant',
          'schedule.peak': lr,
          **_extra(m.sft_extra),
      },
  )


def _rehearsal(c) -> dict:
  """SFT overrides mixing pretraining's texts into its elements, if on."""
  s, p = c.sft, c.pretrain
  if not s.rehearsal:
    return {}  # absent, so stages run without it keep their hashes
  return {
      'data.rehearsal_path': BUNDLED_CORPUS,
      'data.rehearsal_fraction': s.rehearsal,
      'data.synthetic_fraction': p.synthetic_fraction,
      'data.synthetic_kinds': tuple(p.synthetic_kinds),
  }


def _sft_stage(c, name: str, train: str, updates: int, extra) -> Stage:
  s = c.sft
  return Stage(
      name=name,
      module=SFT,
      config=s.config,
      overrides={
          'data.train_path': train,
          'data.val_path': '{split}/val.jsonl',
          'data.format': 'trajectory',
          'data.train_lines': (0, 0),
          'data.val_lines': (0, 0),
          'data.num_epochs': 1000,  # updates bound the run, not epochs
          'data.micro_steps': s.micro_steps,
          'data.seq_len': s.seq_len,
          'model.max_target_length': s.seq_len,
          'tokenizer_path': '{tokenizer}',
          'total_updates': updates,
          'schedule.total_steps': updates,
          'schedule.warmup_steps': s.warmup,
          'eval_every': min(s.eval_every, updates),
          'checkpoint.every': max(1, updates // 4),
          **_rehearsal(c),
          **env_of(c).settings(SFT),
          **extra,
      },
  )


def _climb_data(c) -> Stage:
  """Iris's selection from the RL stage's used rollouts, demos mixed in."""
  m = c.climb
  flags = {
      'rl_workdir': '{rl}',
      'demonstrations': '{split}/train.jsonl' if m.mix_demonstrations else '',
      'min_pass': m.min_pass,
      'max_pass': m.max_pass,
      'min_tool_turns': m.min_tool_turns,
  }
  return Stage(
      name='climb_data',
      module='search_agent.pipeline.climb_data',
      flags=flags,
  )


def _rl(c) -> Stage:
  """train.rl.run from the SFT checkpoint on the train tasks, same env."""
  return _rl_stage(c, 'rl', '{sft}', c.rl.updates, _extra(c.rl.extra))


def _climb_rl(c) -> Stage:
  """train.rl.run resumed from the climb's SFT pass."""
  m = c.climb
  extra = {**_extra(c.rl.extra), **_extra(m.rl_extra)}
  return _rl_stage(c, 'climb_rl', '{climb_sft}', m.rl_updates, extra)


def _rl_stage(c, name: str, init: str, updates: int, extra) -> Stage:
  r, e, env = c.rl, c.eval, env_of(c)
  overrides = {
      'max_updates': updates,
      'optimizer.learning_rate': r.learning_rate,
      'rollout.temperature': r.temperature,
      'tasks_path': _rl_stage_tasks(c),
      'init.sft_workdir': init,
      'tokenizer.path': '{tokenizer}/tokenizer.json',
      'tokenizer.chat_template': 'chatml',
      **env.settings(RL),
      'rollout.max_agent_steps': e.max_steps,
      'rollout.max_tokens_per_call': e.max_new_tokens,
      'sampler.max_new_tokens': e.max_new_tokens,
  }
  if r.policy == 'server':  # only then: earlier runs' RL stays reusable
    overrides['rollout.policy'] = 'server'
    overrides['rollout.local_servers.count'] = r.servers
  elif r.policy != 'in_process':
    raise PlanError(f'rl.policy {r.policy!r}: use in_process or server')
  overrides.update(extra)
  return Stage(
      name=name,
      module=RL,
      config=r.config,
      overrides=overrides,
  )


def eval_stage(
    c,
    name: str,
    checkpoint_dir: str,
    split: str = 'heldout',
    questions: int | None = None,
    path: str = '',
) -> Stage:
  """eval.run on the `split` tasks (those at `path` when given), the
  checkpoint served (`eval.policy`: a local rollout server) or in-process."""
  e = c.eval
  if e.policy not in ('served', 'sampler'):
    raise PlanError(f'eval.policy {e.policy!r}: use served or sampler')
  overrides: dict[str, Any] = {
      'dataset.name': split,
      'dataset.format': 'tasks',
      'dataset.path': path or f'{{tasks}}/tasks.{split}.jsonl',
      'dataset.limit': e.questions if questions is None else questions,
      'policy.kind': e.policy,
      'policy.name': EVALS.get(name, name),
      'sampler.preset': 'tiny',
      'sampler.checkpoint_dir': checkpoint_dir,
      'sampler.tokenizer': '{tokenizer}',
      'sampler.batch_size': e.batch_size,
      'sampler.max_prompt_len': e.max_prompt_len,
      'sampler.max_new_tokens': e.max_new_tokens,
      'judge.kind': 'none',
      'agent.max_steps': e.max_steps,
      'agent.max_output_tokens': e.max_new_tokens,
      'agent.context_limit': e.max_prompt_len + e.max_new_tokens,
      'agent.min_output_tokens': min(16, e.max_new_tokens),
      'agent.temperature': e.temperature,
      'context.policy': 'none',
      'tokenizer': '{tokenizer}/tokenizer.json',
      'concurrency': e.batch_size,
      **env_of(c).settings(EVAL),
  }
  return Stage(
      name=name,
      module=EVAL,
      config='tpu_configs/eval.py:tiny',
      overrides=overrides,
  )


def rl_split(c) -> str:
  """The task split RL draws from: 'rl' (pages SFT never saw) or 'train'."""
  return 'rl' if c.tasks.rl_fraction else 'train'


def _rl_stage_tasks(c) -> str:
  """The task file RL draws from."""
  if c.rl_pool.enabled:
    return '{rl_pool}/tasks.jsonl'
  return f'{{tasks}}/tasks.{rl_split(c)}.jsonl'


def _rl_pool(c) -> Stage:
  """The RL tasks the SFT policy answered in rl_probe, some it missed."""
  p = c.rl_pool
  return Stage(
      name='rl_pool',
      module='search_agent.pipeline.rl_pool',
      flags={
          'tasks': f'{{tasks}}/tasks.{rl_split(c)}.jsonl',
          'probe': '{rl_probe}',
          'unsolved_fraction': p.unsolved_fraction,
          'min_tasks': p.min_tasks,
      },
  )


def _rl_seen(c) -> Stage:
  """The tasks of the groups RL's updates consumed (and, with reach, the
  sets of `families.REACH_SETS`)."""
  flags = {'rl': '{rl}', 'tasks': _rl_stage_tasks(c)}
  if c.rl_seen.reach:  # only then: earlier runs' rl_seen stays reusable
    flags['reach'] = c.rl_seen.reach
  return Stage(
      name='rl_seen', module='search_agent.pipeline.rl_seen', flags=flags
  )


def _eval_rl_seen(
    c, name: str, checkpoint_dir: str, tasks: str = 'tasks'
) -> Stage:
  return eval_stage(
      c, name, checkpoint_dir, 'rl_seen', 0, f'{{rl_seen}}/{tasks}.jsonl'
  )


def _eval_reach(c, tasks: str, model: str) -> Stage:
  """eval_rl_<tasks>_<model>: the SFT or RL checkpoint on rl_seen's
  <tasks>.jsonl."""
  checkpoint = '{sft}' if model == 'sft' else c.rl.checkpoint_dir
  return _eval_rl_seen(c, f'eval_rl_{tasks}_{model}', checkpoint, tasks)


def _eval_phrasings(c, name: str, checkpoint_dir: str) -> Stage:
  """eval.run on the first eval.phrasing_questions held-out phrasing tasks."""
  return eval_stage(
      c, name, checkpoint_dir, 'heldout_phrasings', c.eval.phrasing_questions
  )


def _report(c) -> Stage:
  names = stage_names(c)
  evals = [f'{EVALS[n]}:{n}' for n in names if n in EVALS]
  flags = {
      'run_dir': '{dir}',
      'evals': ','.join(evals),
      'variant': c.variant,
      'device_kind': c.device_kind,
      'variant_reason': c.variant_reason,
  }
  phrased = [f'{EVALS[e]}:{p}' for e, p in PHRASING_EVALS.items() if p in names]
  if phrased:  # only then: earlier reports stay reusable
    flags['phrasings'] = ','.join(phrased)
  if 'eval_rl_seen_rl' in names:  # only then: earlier reports stay reusable
    flags['rl_seen'] = 'eval_rl_seen_sft,eval_rl_seen_rl'
  reach = [s for s in families.REACH_SETS if f'eval_rl_{s}_rl' in names]
  if reach:
    flags['rl_reach'] = ','.join(
        f'{s}:eval_rl_{s}_sft:eval_rl_{s}_rl' for s in reach
    )
  return Stage(
      name=stages_lib.REPORT_STAGE,
      module='search_agent.pipeline.report',
      flags=flags,
      always=True,
  )


BUILDERS: Mapping[str, Callable[[Any], Stage]] = {
    'index': _index,
    'tasks': _tasks,
    'tokenizer': _tokenizer,
    'pretrain': _pretrain,
    'eval_before_sft': lambda c: eval_stage(
        c, 'eval_before_sft', '{pretrain}' if 'pretrain' in c.stages else ''
    ),
    'collect': _collect,
    'filter': _filter,
    'split': _split,
    'sft': _sft,
    'eval_after_sft': lambda c: eval_stage(c, 'eval_after_sft', '{sft}'),
    'rl_probe': lambda c: eval_stage(
        c, 'rl_probe', '{sft}', rl_split(c), c.rl_pool.probe_tasks
    ),
    'rl_pool': _rl_pool,
    'rl': _rl,
    'eval_after_rl': lambda c: eval_stage(
        c, 'eval_after_rl', c.rl.checkpoint_dir
    ),
    'eval_phrasings_after_sft': lambda c: _eval_phrasings(
        c, 'eval_phrasings_after_sft', '{sft}'
    ),
    'eval_phrasings_after_rl': lambda c: _eval_phrasings(
        c, 'eval_phrasings_after_rl', c.rl.checkpoint_dir
    ),
    'rl_seen': _rl_seen,
    'eval_rl_seen_sft': lambda c: _eval_rl_seen(c, 'eval_rl_seen_sft', '{sft}'),
    'eval_rl_seen_rl': lambda c: _eval_rl_seen(
        c, 'eval_rl_seen_rl', c.rl.checkpoint_dir
    ),
    **{
        f'eval_rl_{s}_{m}': functools.partial(_eval_reach, tasks=s, model=m)
        for s in families.REACH_SETS
        for m in ('sft', 'rl')
    },
    'climb_data': _climb_data,
    'climb_sft': _climb_sft,
    'climb_rl': _climb_rl,
    'eval_after_climb': lambda c: eval_stage(
        c, 'eval_after_climb', '{climb_rl}'
    ),
    'report': _report,
}


def phrasing_evals(c) -> bool:
  """Whether the held-out tasks are asked again in held-out phrasings and
  evaluated."""
  return bool(c.tasks.heldout_phrasings and c.eval.phrasing_questions)


def stage_names(c) -> list[str]:
  """`c.stages` with the families that are on inserted (families.py), and without the
  held-out phrasing evaluations when `phrasing_evals` is off."""
  names = list(c.stages)
  if not phrasing_evals(c):
    names = [n for n in names if n not in PHRASING_EVALS.values()]
  for family in families.FAMILIES:
    names = family.insert(c, names)
  return names


# Where each model stage's binary takes the model's sizes.
_TRAINERS = (SFT, RL)


def _with_dims(stage: Stage, dims: Mapping[str, str]) -> Stage:
  """The stage with the model sizes `dims` (train: model.dims.NAME; eval:
  sampler.dims); others, and every stage when `dims` is empty, as built (so
  earlier runs' stages stay reusable)."""
  if not dims:
    return stage
  if stage.module in _TRAINERS:
    extra = {f'model.dims.{k}': v for k, v in dims.items()}
  elif stage.module == EVAL:
    extra = {'sampler.dims': tuple(f'{k}={v}' for k, v in dims.items())}
  else:
    return stage
  return dataclasses.replace(stage, overrides={**stage.overrides, **extra})


def build(c) -> list[Stage]:
  """The configured stages, in the order of `stage_names(c)`."""
  names = stage_names(c)
  unknown = [n for n in names if n not in BUILDERS]
  if unknown:
    raise PlanError(f'unknown stages {unknown}; known: {sorted(BUILDERS)}')
  dims = _extra(c.model.dims)
  return [_with_dims(BUILDERS[name](c), dims) for name in names]
