"""One evaluation from its config: the LLMs, the toolbox, the harness.

`eval.run` is the binary over `run_config`; tests call it directly (the
binary's module defines absl flags, which two binaries in one process
would define twice).
"""

import asyncio

from search_agent.evaluation import config as config_lib
from search_agent.evaluation import harness
from search_agent.evaluation import served


def run_config(c, workdir: str):
  """Builds the LLMs and the toolbox, runs the eval; returns the report."""
  config = config_lib.eval_config(c)
  judge, judge_manifest = config_lib.llm(c.judge)
  aux, _ = config_lib.llm(c.aux)
  with (
      served.policy(c, workdir) as (c, server),
      config_lib.toolbox_factory(c.search, aux, workdir) as toolbox_factory,
  ):
    policy, policy_manifest = config_lib.llm(c.policy, c.sampler)
    if policy is None:
      raise config_lib.EvalSetupError('policy.kind cannot be none')
    if server is not None:
      policy_manifest = {**policy_manifest, 'served': server}
    report = asyncio.run(
        harness.evaluate(
            config,
            policy=policy,
            judge=judge,
            toolbox_factory=toolbox_factory,
            workdir=workdir,
            describe={
                'policy': policy_manifest,
                'judge': judge_manifest,
                'toolbox': toolbox_factory.manifest,
            },
        )
    )
  return report
