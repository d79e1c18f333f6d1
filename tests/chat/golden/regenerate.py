"""Regenerates the golden fixtures of tests/chat/test_renderer.py.

  .venv/bin/python tests/chat/golden/regenerate.py

Writes tiny_tokenizer/ (train_tiny_tokenizer on the bundled 2Wiki corpus,
vocab 4096, with the chatml template as its jinja chat template) and
render_chatml.json / render_qwen3.json (conversation.json rendered with it).
Review the diff before committing: a change means the tokenizer training or
the renderer changed behaviour.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))

# pylint: disable=g-import-not-at-top,wrong-import-position
from search_agent.agent import trajectory
from search_agent.chat import renderer
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.chat import turns
from search_agent.corpus import twowiki


def main() -> None:
  messages = trajectory.Trajectory.from_json(
      json.loads((HERE / 'conversation.json').read_text())
  ).messages
  docs = twowiki.read_2wiki()
  tok = tokenizer_lib.train_tiny_tokenizer(
      docs,
      HERE / 'tiny_tokenizer',
      vocab_size=4096,
      chat_template=renderer.to_jinja(renderer.CHATML),
  )
  for template in (renderer.CHATML, renderer.QWEN3):
    rendered = renderer.render(messages, tok, template=template)
    rows = [
        json.dumps([i, m, tok.decode([i])], ensure_ascii=False)
        for i, m in zip(rendered.token_ids, rendered.loss_mask)
    ]
    text = renderer.render_text(messages, template=template)
    path = HERE / f'render_{template.name}.json'
    path.write_text(
        '{\n "template": %s,\n "text": %s,\n "rows (id, loss, token)": [\n  %s\n ]\n}\n'
        % (
            json.dumps(template.name),
            json.dumps(text, ensure_ascii=False),
            ',\n  '.join(rows),
        )
    )
    print(f'{path}: {len(rendered.token_ids)} tokens')


if __name__ == '__main__':
  main()
