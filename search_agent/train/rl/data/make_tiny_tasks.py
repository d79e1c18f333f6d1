"""Writes tiny_tasks.jsonl: one-hop director questions from the 2Wiki corpus.

  python -m search_agent.train.rl.data.make_tiny_tasks [--n=40]

Every task comes from one bundled-corpus paragraph of the form
"<Film> is a <year> ... film directed by <Name>": the question asks who
directed the film, the answer is the name, the required claim is (film,
directed by, name) with the paragraph's title as its source. The first `n`
matches in corpus order are kept, so the fixture is reproducible. It stands
in for synthesized tasks (`--config.tasks_path=` takes those).
"""

import json
import pathlib
import re

from absl import app
from absl import flags

from search_agent.agent import task as task_lib

_N = flags.DEFINE_integer('n', 40, 'Tasks to write.')
_CORPUS = (
    pathlib.Path(__file__).resolve().parents[3]
    / 'corpus'
    / 'data'
    / '2wikimultihopqa_corpus.json'
)
OUT = pathlib.Path(__file__).resolve().parent / 'tiny_tasks.jsonl'
_PATTERN = re.compile(
    r'^(?P<film>[^.()]+?) is an? (?P<year>\d{4}) [^.]*?film directed by'
    r" (?P<name>[A-Z][\w.'-]+(?: [A-Z][\w.'-]+){0,3})"
)


def director_tasks(docs: list[dict], n: int) -> list[task_lib.Task]:
  """The first `n` director questions found in `docs` ([{title, text}])."""
  out = []
  for doc in docs:
    m = _PATTERN.match(doc['text'])
    if not m or m.group('film').strip() != doc['title'].split(' (')[0]:
      continue
    film, year, name = m.group('film').strip(), m.group('year'), m.group('name')
    out.append(
        task_lib.Task(
            id=f'tiny-{len(out):03d}',
            question=f'Who directed the {year} film {film}?',
            answer=name,
            evidence=(doc['title'],),
            claims=(
                task_lib.Claim(
                    subject=film,
                    relation='directed by',
                    object=name,
                    source=doc['title'],
                ),
            ),
            meta={'source': '2wiki-bundled', 'kind': 'one-hop director'},
        )
    )
    if len(out) == n:
      break
  return out


def main(argv):
  del argv
  docs = json.loads(_CORPUS.read_text(encoding='utf-8'))
  tasks = director_tasks(docs, _N.value)
  OUT.write_text(
      ''.join(
          json.dumps(t.to_json(), ensure_ascii=False) + '\n' for t in tasks
      ),
      encoding='utf-8',
  )
  print(f'{len(tasks)} tasks -> {OUT}')


if __name__ == '__main__':
  app.run(main)
