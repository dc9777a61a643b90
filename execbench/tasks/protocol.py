"""How a run asks its questions: the prompt style, the worked examples, the templates and
the system message, one value the runner, ``show``, the page and ``export`` all render
prompts with (``tasks.asking.ask``), so that a prompt is made one way wherever it is shown
or sent.

The default protocol (reasoning style, the task's own examples, the shipped templates, no
system message) renders every prompt as execbench always has: a run pinned before
protocols existed resumes, and a suite's prompts keep their bytes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from execbench.json_types import JSONObject

SHIPPED = "shipped"
REASONING = "reasoning"
DIRECT = "direct"
STYLES = (SHIPPED, REASONING, DIRECT)
"""``--prompt``: shipped (the default) is each task's own prompt, byte for byte as it has
always been (it asks for the run to be worked out first on every task but the CodeSense
questions and ``input``, which ask for the answer and leave the rest to the model);
reasoning asks every task to work the run out before the answer block; direct asks for
the answer block alone. All are read by the same extractor, so only the request
differs."""

FIXED = "fixed"
SHOT_PICKS = (FIXED, "random", "same-kind", "same-function")
"""``--shot-pick``: which worked examples ``--shots`` shows (``tasks.shots``)."""

EVERY_TASK = "*"
"""The key of a template given for every task of a run (``--template FILE``)."""


@dataclass(frozen=True)
class Protocol:
    """How every question of a run is asked (the module says why it is one value)."""

    style: str = SHIPPED
    shots: int = 0
    shot_pick: str = FIXED
    system: str | None = None
    """A system message sent before every prompt (``--system``)."""
    templates: Mapping[str, str] = field(default_factory=dict)
    """Template texts replacing the shipped ones, by task name (``EVERY_TASK`` for all)."""
    seed: int = 0
    """The seed of a ``random`` shot pick."""

    def template_for(self, task: str) -> str | None:
        """The user's template for ``task``, or None for the shipped one."""
        return self.templates.get(task, self.templates.get(EVERY_TASK))

    def label(self) -> str:
        """The protocol in a few words, as reports tell runs asked differently apart
        (``direct, 1 shot (same-kind), template 1a2b3c, system message 4d5e6f``: the
        texts' short hashes, so that runs with other templates never share a label)."""
        said = [self.style]
        if self.shots:
            pick = "" if self.shot_pick == FIXED else f" ({self.shot_pick})"
            said.append(f"{self.shots} shot{'s' * (self.shots > 1)}{pick}")
        if self.templates:
            said.append(f"template {_short(sorted(self.templates.items()))}")
        if self.system:
            said.append(f"system message {_short(self.system)}")
        return ", ".join(said)

    def pinned(self) -> JSONObject | None:
        """What a resume must find unchanged: None for the default protocol (so that runs
        pinned before it existed resume), else the style, pick, system message and each
        template's SHA-256 (``run.json`` keeps the texts, so the run's prompts can be shown
        again)."""
        if self == Protocol(shots=self.shots, seed=self.seed):
            return None
        return {"style": self.style, "shot_pick": self.shot_pick, "system": self.system,
                "templates": {task: hashlib.sha256(text.encode()).hexdigest()
                              for task, text in sorted(self.templates.items())}}


def _short(value: object) -> str:
    """Six hex digits of the SHA-256 of ``value``'s JSON, to tell texts apart in a label."""
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:6]
