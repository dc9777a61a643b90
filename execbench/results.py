"""The typed parts of ``results.json``: a group's metrics, a task's groups, a pairing's
blocks, usage and the sessions, each with one mapping to and from its record.

The records keep the keys reports and other tools have read since results were first
written (``pass@1``, ``accuracy_ci95``, ``by_source``), so a file made before these types
existed reads back, and one written now has the same bytes as before. Keys a record may
lack (written only when they say something) stay absent when they would be empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

Record = dict[str, Any]


def _pass_key(k: int) -> str:
    return f"pass@{k}"


def _ks(record: Mapping[str, Any], prefix: str = "pass@") -> int:
    """How many pass@k a block holds: k runs 1..n with no gap."""
    k = 0
    while f"{prefix}{k + 1}" in record:
        k += 1
    return k


@dataclass(frozen=True)
class Group:
    """The metrics of one set of samples (a task, or a task within one source or one
    category): instances are the unit, so each counts once however many samples it has."""

    instances: int
    samples: int
    pass_at: tuple[float | None, ...]
    """pass@k for k = 1, 2, ... up to the run's n; None where no instance had k samples."""
    rested_on: tuple[int, ...]
    """For each k, the instances pass@k rests on (those with at least k samples)."""
    accuracy: float
    accuracy_ci95: tuple[float, float]
    verdicts: Mapping[str, int]
    score: float | None = None
    """The mean partial credit, where the task gives one."""
    failures: Mapping[str, int] = field(default_factory=dict)
    """How many samples broke each rule of the answer format (``Score.extra["failure"]``)."""
    errors: Mapping[str, int] = field(default_factory=dict)
    """How many wrong or unreadable samples got each error label (``common.taxonomy``);
    empty in results written before labels existed, and where every answer was right."""

    def pass_at_k(self, k: int) -> float | None:
        return self.pass_at[k - 1] if 1 <= k <= len(self.pass_at) else None

    def instances_at(self, k: int) -> int:
        """The instances pass@``k`` rests on."""
        return self.rested_on[k - 1] if 1 <= k <= len(self.rested_on) else 0

    def number(self, key: str) -> float | None:
        """The number a declared metric names by its record key (``pass@2``, ``score``,
        ``accuracy``), None where the group has none."""
        if key.startswith("pass@") and key[5:].isdigit():
            return self.pass_at_k(int(key[5:]))
        return {"accuracy": self.accuracy, "score": self.score}.get(key)

    def to_record(self) -> Record:
        record: Record = {"instances": self.instances, "samples": self.samples}
        for k, (value, count) in enumerate(zip(self.pass_at, self.rested_on, strict=True),
                                           start=1):
            record[_pass_key(k)] = value
            if count != self.instances:
                record[f"{_pass_key(k)}_instances"] = count
        record["accuracy"] = self.accuracy
        record["accuracy_ci95"] = list(self.accuracy_ci95)
        if self.score is not None:
            record["score"] = self.score
        record["verdicts"] = dict(self.verdicts)
        if self.failures:
            record["failures"] = dict(self.failures)
        if self.errors:
            record["errors"] = dict(self.errors)
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Group:
        n = _ks(record)
        low, high = record["accuracy_ci95"]
        return cls(instances=record["instances"], samples=record["samples"],
                   pass_at=tuple(record[_pass_key(k)] for k in range(1, n + 1)),
                   rested_on=tuple(record.get(f"{_pass_key(k)}_instances",
                                              record["instances"]) for k in range(1, n + 1)),
                   accuracy=record["accuracy"], accuracy_ci95=(low, high),
                   verdicts=dict(record["verdicts"]), score=record.get("score"),
                   failures=dict(record.get("failures", {})),
                   errors=dict(record.get("errors", {})))


def _groups(record: Mapping[str, Any]) -> dict[str, Group]:
    return {name: Group.from_record(group) for name, group in record.items()}


@dataclass(frozen=True)
class TaskMetrics:
    """One task's groups: over all its instances, per source, and per category of each
    breakdown it declares (``Task.breakdowns``)."""

    all: Group
    by_source: Mapping[str, Group]
    breakdowns: Mapping[str, Mapping[str, Group]] = field(default_factory=dict)

    def group(self, source: str | None = None) -> Group | None:
        """The group over all instances, or over one source's (None where it has none)."""
        return self.all if source is None else self.by_source.get(source)

    def to_record(self) -> Record:
        record: Record = {"all": self.all.to_record(),
                          "by_source": {name: group.to_record()
                                        for name, group in self.by_source.items()}}
        if self.breakdowns:
            record["breakdowns"] = {
                name: {category: group.to_record() for category, group in split.items()}
                for name, split in self.breakdowns.items()}
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TaskMetrics:
        return cls(all=Group.from_record(record["all"]), by_source=_groups(record["by_source"]),
                   breakdowns={name: _groups(split)
                               for name, split in record.get("breakdowns", {}).items()})


@dataclass(frozen=True)
class PairedGroup:
    """Success on both tasks of a pairing over a set of (program, call) pairs."""

    pairs: int
    pass_at: tuple[float | None, ...]
    """The product of the two tasks' pass@k, for k = 1, 2, ..."""
    paired_pass_at: tuple[float | None, ...]
    """pass@k over sample i of one task matched with sample i of the other."""
    quadrants: Quadrants | None = None
    """Where the matched samples fall: right on both tasks, on the first only, on the
    second only, on neither; None in results written before they were counted."""

    def number(self, key: str) -> float | None:
        for prefix, values in (("paired_pass@", self.paired_pass_at), ("pass@", self.pass_at)):
            if key.startswith(prefix) and key[len(prefix):].isdigit():
                k = int(key[len(prefix):])
                return values[k - 1] if 1 <= k <= len(values) else None
        return None

    def to_record(self) -> Record:
        record: Record = {"pairs": self.pairs}
        for k, (independent, paired) in enumerate(zip(self.pass_at, self.paired_pass_at,
                                                      strict=True), start=1):
            record[_pass_key(k)] = independent
            record[f"paired_{_pass_key(k)}"] = paired
        if self.quadrants is not None:
            record["quadrants"] = asdict(self.quadrants)
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> PairedGroup:
        n = _ks(record)
        found = record.get("quadrants")
        quadrants = None
        if isinstance(found, dict) and all(isinstance(found.get(name), int | float)
                                           for name in QUADRANTS):
            quadrants = Quadrants(*(float(found[name]) for name in QUADRANTS))
        return cls(pairs=record["pairs"],
                   pass_at=tuple(record[_pass_key(k)] for k in range(1, n + 1)),
                   paired_pass_at=tuple(record[f"paired_{_pass_key(k)}"]
                                        for k in range(1, n + 1)),
                   quadrants=quadrants)


QUADRANTS = ("both", "first_only", "second_only", "neither")


@dataclass(frozen=True)
class Quadrants:
    """The shares of matched sample pairs (sample i of one task with sample i of the
    other, each pair weighted so that every (program, call) counts once) right on both
    tasks, on the first only, on the second only, on neither: DexBench's per-program
    view of forward against backward reasoning."""

    both: float
    first_only: float
    second_only: float
    neither: float


@dataclass(frozen=True)
class Paired:
    """A pairing's metrics (``results.json``: ``paired_metrics.NAME``)."""

    tasks: tuple[str, str]
    all: PairedGroup
    by_source: Mapping[str, PairedGroup]

    def to_record(self) -> Record:
        return {"tasks": list(self.tasks), "all": self.all.to_record(),
                "by_source": {name: block.to_record() for name, block in self.by_source.items()}}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Paired:
        first, second = record["tasks"]
        return cls(tasks=(first, second), all=PairedGroup.from_record(record["all"]),
                   by_source={name: PairedGroup.from_record(block)
                              for name, block in record["by_source"].items()})


@dataclass(frozen=True)
class Latency:
    """Seconds per sample, all attempts and back-off included."""

    mean: float
    p50: float
    p90: float
    p99: float
    max: float

    def to_record(self) -> Record:
        return {"mean": self.mean, "p50": self.p50, "p90": self.p90, "p99": self.p99,
                "max": self.max}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Latency:
        return cls(**{name: record[name] for name in ("mean", "p50", "p90", "p99", "max")})


@dataclass(frozen=True)
class Cost:
    """What the tokens cost, in the unit of the prices given per million tokens."""

    input: float
    output: float
    price_input_per_million: float
    price_output_per_million: float

    @property
    def total(self) -> float:
        return self.input + self.output

    def to_record(self) -> Record:
        return {"input": self.input, "output": self.output,
                "price_input_per_million": self.price_input_per_million,
                "price_output_per_million": self.price_output_per_million,
                "total": self.total}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Cost:
        return cls(input=record["input"], output=record["output"],
                   price_input_per_million=record["price_input_per_million"],
                   price_output_per_million=record["price_output_per_million"])


@dataclass(frozen=True)
class Usage:
    """What a run cost (``metrics.usage_summary``)."""

    samples: int
    requests: int
    retries: int
    input_tokens: int
    output_tokens: int
    samples_without_usage: int
    latency_seconds: Latency | None
    wall_seconds: float
    endpoints: Mapping[str, int]
    cost: Cost | None = None

    def to_record(self) -> Record:
        record: Record = {
            "samples": self.samples, "requests": self.requests, "retries": self.retries,
            "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
            "samples_without_usage": self.samples_without_usage,
            "latency_seconds": None if self.latency_seconds is None
            else self.latency_seconds.to_record(),
            "wall_seconds": self.wall_seconds, "endpoints": dict(self.endpoints)}
        if self.cost is not None:
            record["cost"] = self.cost.to_record()
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Usage:
        """Read a usage block; one written before a count existed reads it as 0 (or no
        endpoints), as ``usage_summary`` counts a sample record that lacks a field."""
        latency, cost = record.get("latency_seconds"), record.get("cost")
        return cls(samples=record["samples"], requests=record.get("requests", 0),
                   retries=record.get("retries", 0),
                   input_tokens=record.get("input_tokens", 0),
                   output_tokens=record.get("output_tokens", 0),
                   samples_without_usage=record.get("samples_without_usage", 0),
                   latency_seconds=None if latency is None else Latency.from_record(latency),
                   wall_seconds=record.get("wall_seconds", 0.0),
                   endpoints=dict(record.get("endpoints", {})),
                   cost=None if cost is None else Cost.from_record(cost))


SESSION_FIELDS = ("started", "ended", "seconds", "outcome", "execbench_version", "python",
                  "host", "command")


@dataclass(frozen=True)
class Session:
    """One invocation of a run (``rundir.begin_session``); the fields after ``started``
    stay None while it runs, and for one that was stopped before it could say how."""

    started: str
    ended: str | None = None
    seconds: float | None = None
    outcome: str | None = None
    execbench_version: str | None = None
    python: str | None = None
    host: str | None = None
    command: str | None = None

    def to_record(self) -> Record:
        return {name: getattr(self, name) for name in SESSION_FIELDS}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Session:
        return cls(record["started"], **{name: record.get(name) for name in SESSION_FIELDS[1:]})


class Scored(Protocol):
    """What a declared metric is read from: a run's results (``rundir.Results``)."""

    @property
    def metrics(self) -> Mapping[str, TaskMetrics]: ...

    @property
    def paired_metrics(self) -> Mapping[str, Paired]: ...

    @property
    def task_metrics(self) -> Mapping[str, Any]: ...


METRICS, PAIRED, SUMMARY = "metrics", "paired_metrics", "task_metrics"


@dataclass(frozen=True)
class Place:
    """Where a declared number lies in a run's results: a key of a task's group (over all
    instances, one source's, or one category's), of a pairing's block, or down a task's
    own summary. Results files declare it as the record's keys (``keys``), which
    ``from_keys`` reads back, so a run of a task not installed here still reports."""

    section: str
    """``metrics``, ``paired_metrics`` or ``task_metrics``."""
    owner: str
    """The task, or the pairing."""
    within: tuple[str, ...]
    """The group (``("all",)``, ``("by_source", SOURCE)``, ``("breakdowns", NAME,
    CATEGORY)``) or, in a summary, the keys down to the number's block."""
    key: str

    @classmethod
    def group(cls, task: str, key: str) -> Place:
        """A number of the task's group over all its instances (``pass@1``, ``score``)."""
        return cls(METRICS, task, ("all",), key)

    @classmethod
    def paired(cls, pairing: str, key: str) -> Place:
        return cls(PAIRED, pairing, ("all",), key)

    @classmethod
    def summary(cls, task: str, *keys: str) -> Place:
        """A number down the task's own summary (``Task.summarize``)."""
        return cls(SUMMARY, task, keys[:-1], keys[-1])

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.section, self.owner, *self.within, self.key)

    @classmethod
    def from_keys(cls, keys: list[str] | tuple[str, ...]) -> Place:
        section, owner, *within, key = keys
        return cls(section, owner, tuple(within), key)

    def at_k(self, k: int) -> Place:
        """The same place for pass@``k``."""
        return replace(self, key=_pass_key(k))

    def in_source(self, source: str) -> Place | None:
        """The same number within one source (the ``by_source`` block that stands beside
        each ``all`` block), or None for a number kept over all sources only."""
        if "all" not in self.within:
            return None
        at = self.within.index("all")
        return replace(self, within=(*self.within[:at], "by_source", source,
                                     *self.within[at + 1:]))

    def read(self, results: Scored) -> Any:
        """What lies there in ``results``; None where they lack it."""
        if self.section == SUMMARY:
            found: Any = results.task_metrics.get(self.owner)
            for name in (*self.within, self.key):
                if not isinstance(found, Mapping):
                    return None
                found = found.get(name)
            return found
        if self.section == PAIRED:
            pairing = results.paired_metrics.get(self.owner)
            block = None if pairing is None else _within(pairing, self.within)
            return None if block is None else block.number(self.key)
        task = results.metrics.get(self.owner)
        group = None if task is None else _within(task, self.within)
        if group is None:
            return None
        return group.accuracy_ci95 if self.key == "accuracy_ci95" else group.number(self.key)


def _within(blocks: TaskMetrics | Paired, within: tuple[str, ...]) -> Any:
    """The block ``within`` names of a task's or a pairing's blocks, or None."""
    match within:
        case ("all",):
            return blocks.all
        case ("by_source", source):
            return blocks.by_source.get(source)
        case ("breakdowns", name, category) if isinstance(blocks, TaskMetrics):
            return blocks.breakdowns.get(name, {}).get(category)
    return None


@dataclass(frozen=True)
class Metric:
    """A number a task puts in ``results.json``, declared so that reports and leaderboards
    can show any task family without knowing it."""

    name: str
    """Its label in tables (``pass@1``, ``OC``, ``R_dual pass@1``)."""
    at: Place
    higher_is_better: bool = True
    headline: bool = False
    """Shown in the leaderboard (one column per headline metric)."""
    description: str = ""
    interval: Place | None = None
    """Where its 95% interval (``[low, high]``) lies, where results hold one: reports draw
    it beside the value, so a gap between two models can be told from noise."""

    def read(self, results: Scored) -> float | None:
        """The metric's value in one run's results; None where the run lacks it."""
        value = self.at.read(results)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    def read_interval(self, results: Scored) -> tuple[float, float] | None:
        """The metric's 95% interval in one run's results; None where it has none."""
        found = None if self.interval is None else self.interval.read(results)
        if isinstance(found, list | tuple) and len(found) == 2 \
                and all(isinstance(bound, int | float) for bound in found):
            return (found[0], found[1])
        return None


@dataclass(frozen=True)
class DeclaredMetric:
    """A metric as a run's results declare it: which task's, of which family."""

    task: str
    family: str
    metric: Metric

    @property
    def name(self) -> str:
        return self.metric.name

    @property
    def higher_is_better(self) -> bool:
        return self.metric.higher_is_better

    @property
    def description(self) -> str:
        return self.metric.description

    def to_record(self) -> Record:
        metric = self.metric
        return {"task": self.task, "family": self.family, "name": metric.name,
                "path": list(metric.at.keys), "higher_is_better": metric.higher_is_better,
                "headline": metric.headline, "description": metric.description,
                "interval": None if metric.interval is None else list(metric.interval.keys)}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> DeclaredMetric:
        interval = record.get("interval")
        return cls(record["task"], record["family"], Metric(
            record["name"], Place.from_keys(record["path"]),
            higher_is_better=record.get("higher_is_better", True),
            headline=record.get("headline", False), description=record.get("description", ""),
            interval=None if interval is None else Place.from_keys(interval)))
