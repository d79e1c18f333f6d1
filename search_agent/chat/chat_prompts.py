"""The renderer as the sampler adapter's `PromptRenderer`.

`SamplerLLM` (search_agent/llm/sampler_client.py) needs prompt token ids for
chat messages; the llm layer cannot import the agent layer, so this adapter
is built here and handed to it: protocol messages become Turns, rendered by
the one renderer with the generation prompt appended.
"""

from typing import Sequence

from search_agent.chat import messages as messages_lib
from search_agent.chat import renderer
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.llm import protocol


class RendererPrompts:
  """Renders chats with a tokenizer and a chat template."""

  def __init__(
      self, tokenizer: tokenizer_lib.Tokenizer, template: str = 'chatml'
  ):
    self.tokenizer = tokenizer
    self.template = renderer.get_template(template)
    self.stop_token_ids = renderer.stop_token_ids(tokenizer, self.template)

  def prompt_ids(self, messages: Sequence[protocol.Message]) -> tuple[int, ...]:
    """The prompt's token ids: the sampled ids of the last assistant turn
    that carries them (`protocol.SAMPLED_TOKEN_IDS`, ending with the turn
    end) continued by the rendered rest, else the whole chat rendered."""
    turns = [messages_lib.to_turn(m) for m in messages]
    end_id = self.tokenizer.token_id(self.template.turn_end)
    for j in range(len(messages) - 1, -1, -1):
      sampled = messages[j].get(protocol.SAMPLED_TOKEN_IDS)
      if messages[j]['role'] == 'assistant' and sampled:
        if sampled[-1] != end_id:
          break  # cut before its turn end: render the text instead
        rest = renderer.render_after_assistant(
            turns, self.tokenizer, start=j + 1, template=self.template
        )
        return tuple(sampled) + rest.token_ids
    return renderer.render(
        turns,
        self.tokenizer,
        add_generation_prompt=True,
        template=self.template,
    ).token_ids

  def decode(self, token_ids: Sequence[int]) -> str:
    return self.tokenizer.decode(token_ids)
