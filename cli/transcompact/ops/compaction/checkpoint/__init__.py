"""The checkpoint of the emergency mode: what the dropped part held, found without a model, in
the sections of the model's checkpoint where it has facts, within one token budget
(`--checkpoint-tokens`), with a count of what did not fit; after a model's summary, the
artifact trail. An earlier summary is merged, not quoted.

Its modules, in pipeline order:

- `facts`: the facts of the dropped part, found in one pass over its messages.
- `layout`: the sections, one record each (heading, item, parse, merge, what it keeps and its
  rank in the budget, the kind it counts, whether it is in the trail), in the order shown.
- `earlier`: an earlier summary's sections read back by those records and merged with the facts.
- `room`: the budget as the sections take from it, and text cut to fit (its start and end).
- `render`: the checkpoint written, and the counts of what was held and kept.
- `trail`: the artifact trail after a model's summary.
"""

from ..output_errors import error_lines
from .earlier import goal_of, sections
from .facts import INTERRUPTED, Facts, find_facts, is_trajectory, own_words, user_text, without_heredoc_bodies
from .layout import COUNTED, OPENING_IS_GOAL
from .render import checkpoint
from .room import head_and_tail
from .trail import artifact_trail

__all__ = ["COUNTED", "INTERRUPTED", "OPENING_IS_GOAL", "Facts", "artifact_trail", "checkpoint", "error_lines", "find_facts", "goal_of",
           "head_and_tail", "is_trajectory", "own_words", "sections", "user_text", "without_heredoc_bodies"]
