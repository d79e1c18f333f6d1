"""The RL rollout worker with the rollout server as its policy."""

import asyncio
import json
import pathlib

import pytest

from search_agent.agent import budgets
from search_agent.agent import react
from search_agent.chat import chat_prompts
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.llm import server_client
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.rewards import outcome
from search_agent.search import tools as tools_lib
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.train.rl import replay_queue
from search_agent.train.rl import rollout_worker
from search_agent.train.rl import scoring
from search_agent.train.rl import token_exact

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_worker_group_through_the_server(server, tiny_index, tmp_path):
  url, served = server
  tok = tokenizer_lib.load_tokenizer(REPO / 'tests/chat/golden/tiny_tokenizer')
  policy = server_client.ServerLLM(
      server_client.ServerConfig(base_urls=(url,), routed_experts=True),
      chat_prompts.RendererPrompts(tok),
  )
  engine = tantivy_engine(tiny_index)
  tb_cfg = tools_lib.ToolboxConfig(tools=('search', 'visit'), top_k=3)
  system = prompt_lib.load('agent_system.md').render(
      tools=react.tool_text(tools_lib.schemas.tool_schemas(tb_cfg.tools))
  )
  worker = rollout_worker.RolloutWorker(
      rollout_worker.WorkerConfig(group_size=2),
      policy=policy,
      agent_cfg=react.AgentConfig(
          budgets=budgets.Budgets(
              max_steps=2,
              max_output_tokens=16,
              context_limit=1790,
              min_output_tokens=8,
          ),
      ),
      toolbox_factory=lambda task: tools_lib.Toolbox(
          engine, config=tb_cfg, context=task.question
      ),
      system_text=system,
      scorer=scoring.DeterministicScorer(outcome.RewardWeights()),
      queue=replay_queue.ReplayQueue(tmp_path / 'queue'),
      errors_path=tmp_path / 'errors.jsonl',
  )
  task = json.loads(
      (REPO / 'eval/data/2wiki_demo_tasks.jsonl').read_text().splitlines()[0]
  )
  try:
    group = asyncio.run(
        worker.run_group({'task': task, 'group_id': 'g0', 'batch': 0})
    )
  finally:
    engine.close()
  # Token-exact through the server: nothing dropped, routing stitched.
  assert group.meta['dropped_inexact'] == 0, group.meta['inexact_reasons']
  assert len(group.trajectories) == 2
  assert group.meta['versions'] == [served.engine.version]
  # Each finished rollout released its sessions on the server.
  assert not policy._sessions and policy.released_sessions >= 2
  for scored in group.trajectories:
    assert scored.segments
    for tokens in scored.segments:
      gen = [v for v, m in zip(tokens.versions, tokens.loss_mask) if m]
      assert gen and set(gen) == {served.engine.version}
      routing = token_exact.decode_routing(tokens.routed_experts)
      assert routing.shape[0] >= len(tokens.token_ids) - 1
