"""What a run's results keep of each sample: the fields the metrics, the usage and the
tasks' summaries read, and not the texts (response, reasoning, answer, detail, error),
the bulk of a log. A run of a large suite holds one of these per sample in memory, so it
has slots and no more than it needs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from execbench.json_types import JSON, JSONObject


@dataclass(slots=True)
class Kept:
    """One sample as results read it."""

    instance_id: str
    task: str
    source: str
    sample: int
    """Which of the run's ``n`` samples of the instance this is."""
    verdict: str
    correct: bool
    score: float | None = None
    extra: JSONObject | None = None
    """What the task added to the verdict (``failure``, a coherence class, ...)."""
    latency: float | None = None
    attempts: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    endpoint: str | None = None

    def added(self, key: str) -> JSON:
        """A field of ``extra``; None where the task added none."""
        return None if self.extra is None else self.extra.get(key)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Kept:
        """The kept fields of a sample record (``samples.jsonl``); an optional field an
        older log lacks reads as None."""
        return cls(record["instance_id"], record["task"], record["source"], record["sample"],
                   record["verdict"], record["correct"], record.get("score"),
                   record.get("extra"), record.get("latency"), record.get("attempts"),
                   record.get("input_tokens"), record.get("output_tokens"),
                   record.get("endpoint"))
