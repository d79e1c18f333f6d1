"""A short search dialogue the context-policy tests share: system, question,
three rounds of (tool call, observation), then the answer."""

from search_agent.agent.trajectory import ToolCall
from search_agent.agent.trajectory import Turn

SYSTEM = Turn(role='system', content='sys')
QUESTION = Turn(role='user', content='Who directed Hope?')


def call(q: str) -> Turn:
  return Turn(
      role='assistant',
      reasoning=f'think {q}',
      content=f'<tool_call>{{"name": "search", "arguments": {{"query": ["{q}"]}}}}</tool_call>',
      tool_calls=(ToolCall(name='search', arguments={'query': [q]}),),
  )


def obs(text: str) -> Turn:
  return Turn(role='tool', name='search', content=text)


MESSAGES = (
    SYSTEM,
    QUESTION,
    call('a'),
    obs('obs one'),
    call('b'),
    obs('obs two!'),
    call('c'),
    obs('obs three'),
    Turn(role='assistant', reasoning='done', content='<answer>X</answer>'),
)
