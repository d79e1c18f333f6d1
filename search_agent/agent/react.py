"""The ReAct loop: reason, call tools, observe, answer.

Each step is one assistant call. The reply is parsed with
`toolcall.parse_assistant`: `<tool_call>{json}</tool_call>` blocks are run
through the trajectory's Toolbox and come back as tool turns; an `<answer>`
ends the run. A reply whose tool call is malformed (or that has neither a
call nor an answer) is kept, marked `invalid`, answered with an error
observation, and the loop goes on. A reply with a valid `<answer>` ends the
run even if it also holds tool calls (they are not run). Several calls in
one reply run one after another, in order (ref_ids stay deterministic).
Agent mistakes never raise; infrastructure failures (LLMError after the
client's retries) propagate, and the runner records the trajectory as
'failed'. A search service that fails after its retries is the toolbox's
to report: a failed call's error observation by default
(`ToolboxConfig.service_errors`). Budgets and context policies are
described in `budgets.py` and `managed_context.py`; the status and
`budgets_hit` of the returned Trajectory say which limit ended the run.
"""

import dataclasses
import json
import time
from typing import Any, Protocol, Sequence

from search_agent.agent import budgets as budgets_lib
from search_agent.agent import managed_context
from search_agent.agent import token_record
from search_agent.agent import trajectory
from search_agent.chat import messages as messages_lib
from search_agent.chat import toolcall
from search_agent.llm import protocol

NO_ACTION = (
    'Your reply had neither a <tool_call> nor an <answer>. Call a tool, or'
    ' give your final answer inside <answer></answer>.'
)


class ToolResultLike(Protocol):
  text: str
  error: str | None


class Toolbox(Protocol):
  """The tools of one trajectory (search_agent/search/tools.py)."""

  def schemas(self) -> list[dict[str, Any]]:
    ...

  async def execute(self, call: trajectory.ToolCall) -> ToolResultLike:
    ...


def tool_names(schemas: Sequence[dict[str, Any]]) -> list[str]:
  return [s.get('function', s)['name'] for s in schemas]


TOOL_TEXT_STYLES = ('json', 'signature')
_JSON_TYPES = {'array': 'list', 'string': 'str', 'integer': 'int'}


def _signature(schema: dict[str, Any]) -> str:
  """One tool as one line: `name(arg: type, opt: type = ...)`."""
  fn = schema.get('function', schema)
  params = fn.get('parameters', {})
  required = params.get('required', ())
  args = []
  for key, prop in params.get('properties', {}).items():
    kind = _JSON_TYPES.get(prop.get('type', ''), prop.get('type', 'any'))
    if kind == 'list':
      item = prop.get('items', {}).get('type', '')
      kind = f'list[{_JSON_TYPES.get(item, item or "any")}]'
    args.append(f'{key}: {kind}' + ('' if key in required else ' = ...'))
  return f'{fn["name"]}({", ".join(args)})'


def tool_text(schemas: Sequence[dict[str, Any]], style: str = 'json') -> str:
  """The tools as the system prompt lists them.

  Args:
    schemas: OpenAI function-calling tool definitions.
    style: 'json' (one JSON schema a line, the recipe's) or 'signature'
      (one `name(arg: type)` line a tool: a compact prompt for tiny models).
  """
  if style == 'signature':
    return '\n'.join(_signature(s) for s in schemas)
  if style != 'json':
    raise ValueError(
        f'tool text style {style!r} is not one of {TOOL_TEXT_STYLES}'
    )
  return '\n'.join(json.dumps(s, ensure_ascii=False) for s in schemas)


@dataclasses.dataclass(frozen=True, kw_only=True)
class AgentConfig:
  """How one agent samples and manages its context.

  Attributes:
    budgets: Step, output-token and context limits.
    context: Context policy.
    temperature: Sampling temperature (recipe: 1.0).
    top_p: Nucleus mass (recipe: 1.0).
    seed: Base sampling seed; step i uses seed + i. None for unseeded.
  """

  budgets: budgets_lib.Budgets = budgets_lib.Budgets()
  context: managed_context.ContextConfig = managed_context.ContextConfig()
  temperature: float = 1.0
  top_p: float = 1.0
  seed: int | None = None


@dataclasses.dataclass
class _Run:
  """Mutable state of one run."""

  ctx: managed_context.ManagedContext
  names: list[str]
  tokens: token_record.TokenAssembler = dataclasses.field(
      default_factory=token_record.TokenAssembler
  )
  status: str = 'max_steps'
  answer: str | None = None
  hit: list[str] = dataclasses.field(default_factory=list)
  error: str | None = None
  steps: int = 0
  start: float = dataclasses.field(default_factory=time.monotonic)
  usage: dict[str, Any] = dataclasses.field(
      default_factory=lambda: {
          'peak_prompt_tokens': 0,
          'peak_backend_prompt_tokens': None,
      }
  )


def _generations(tokens: token_record.TokenAssembler) -> dict[str, Any]:
  """Per-call tokens, kept when there are no token-exact segments."""
  if not tokens.segments() and tokens.generations:
    return {'generations': tokens.generations}
  return {}


def _track(usage, n_prompt: int, completion: protocol.Completion) -> None:
  """Peak prompt size: as counted here, and as the backend reported it."""
  usage['peak_prompt_tokens'] = max(usage['peak_prompt_tokens'], n_prompt)
  if completion.prompt_tokens is not None:
    usage['peak_backend_prompt_tokens'] = max(
        usage['peak_backend_prompt_tokens'] or 0, completion.prompt_tokens
    )


class ReActAgent:
  """Runs one question to a Trajectory; never raises for model misbehaviour."""

  def __init__(
      self,
      llm: protocol.LLM,
      config: AgentConfig,
      *,
      counter: budgets_lib.TokenCounter | None = None,
      summarizer: protocol.LLM | None = None,
  ):
    self.llm = llm
    self.config = config
    self.counter = counter or budgets_lib.CharTokenCounter()
    self.summarizer = summarizer or llm

  async def run(
      self,
      *,
      traj_id: str,
      task_id: str,
      question: str,
      system_prompt: str,
      toolbox: Toolbox,
      user_content: str | None = None,
      meta: dict[str, Any] | None = None,
  ) -> trajectory.Trajectory:
    """Runs the loop; LLMError (other than context length) propagates."""
    cfg = self.config
    run = _Run(
        ctx=managed_context.ManagedContext(
            cfg.context, cfg.budgets, self.counter, self.summarizer
        ),
        names=tool_names(toolbox.schemas()),
    )
    run.ctx.append(trajectory.Turn(role='system', content=system_prompt))
    run.ctx.append(
        trajectory.Turn(role='user', content=user_content or question)
    )
    for step in range(1, cfg.budgets.max_steps + 1):
      if await self._call(run, step, toolbox):
        break
    else:
      run.hit = [budgets_lib.MAX_STEPS]
    return trajectory.Trajectory(
        id=traj_id,
        task_id=task_id,
        question=question,
        messages=tuple(run.ctx.history),
        final_answer=run.answer,
        status=run.status,
        budgets_hit=tuple(run.hit),
        error=run.error,
        tokens=run.tokens.record(),
        segments=run.tokens.segments(),
        timings={'total': time.monotonic() - run.start},
        meta={
            **(meta or {}),
            'policy_model': self.llm.name,
            'steps': run.steps,
            'usage': run.usage,
            'context': {
                **dataclasses.asdict(cfg.context),
                'events': run.ctx.events,
            },
            'budgets': dataclasses.asdict(cfg.budgets),
            'tokens_note': run.tokens.note,
            'context_slides': run.tokens.slides,
            **_generations(run.tokens),
        },
    )

  async def _call(self, run: '_Run', step: int, toolbox: Toolbox) -> bool:
    """One agent step; True when the run ends (run.status says why)."""
    cfg = self.config
    try:
      n_prompt = await run.ctx.fit(step, cfg.budgets.max_steps - step + 1)
    except managed_context.ContextSummaryError as e:
      run.status, run.error = 'failed', str(e)
      return True
    if n_prompt is None:
      run.status, run.hit = 'context_limit', [budgets_lib.CONTEXT_LIMIT]
      return True
    params = protocol.SamplingParams(
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        max_tokens=cfg.budgets.output_room(n_prompt),
        seed=None if cfg.seed is None else cfg.seed + step,
    )
    view = run.ctx.view()
    messages = [messages_lib.to_message(t) for t in view]
    after = run.tokens.continuation()
    if after is not None and view == run.ctx.history:
      # Nothing elided: the sampled ids continue the next prompt exactly.
      index, ids = after
      messages[index] = {**messages[index], protocol.SAMPLED_TOKEN_IDS: ids}
    try:
      [completion] = await self.llm.chat(messages, params)
    except protocol.ContextLengthError:
      run.status, run.hit = 'context_limit', [budgets_lib.CONTEXT_LIMIT]
      return True
    run.steps = step
    _track(run.usage, n_prompt, completion)
    parsed = toolcall.parse_assistant(completion.text, run.names)
    done = await self._step(run.ctx, toolbox, parsed, completion, run.tokens)
    if completion.finish_reason == 'length':
      # Cut at the room the context left, not at max_output_tokens: the
      # context limit is what ended the run.
      if params.max_tokens < cfg.budgets.max_output_tokens:
        run.status, run.hit = 'context_limit', [budgets_lib.CONTEXT_LIMIT]
      else:
        run.status, run.hit = 'max_tokens', [budgets_lib.MAX_OUTPUT_TOKENS]
      return True
    if done:
      run.status, run.answer = 'answered', parsed.answer
    return done

  async def _step(self, ctx, toolbox, parsed, completion, tokens) -> bool:
    """Appends the assistant turn and observations; True when answered."""
    invalid = parsed.has_invalid_tool_call
    answered = parsed.answer is not None and not invalid
    no_action = not parsed.tool_calls and not answered and not invalid
    truncated = completion.finish_reason == 'length'
    turn = trajectory.Turn(
        role='assistant',
        content=parsed.content,
        reasoning=parsed.reasoning,
        tool_calls=parsed.tool_calls,
        invalid=invalid or (no_action and not truncated),
    )
    ctx.append(turn)
    tokens.add(
        completion, trainable=turn.trainable, message=len(ctx.history) - 1
    )
    if answered or truncated:
      return answered
    for call in parsed.tool_calls:
      result = await toolbox.execute(call)
      text = result.text or f'Error: {result.error}'
      ctx.append(trajectory.Turn(role='tool', name=call.name, content=text))
    errors = [e for e in parsed.errors if e.kind in toolcall.TOOL_CALL_ERRORS]
    if errors or no_action:
      text = '\n'.join(f'Error ({e.kind}): {e.message}' for e in errors)
      ctx.append(
          trajectory.Turn(role='tool', name='error', content=text or NO_ACTION)
      )
    return False
