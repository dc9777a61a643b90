"""Verdicts as rewards, for trainers: verl's ``compute_score``, a TRL reward callable and
the scoring behind ``execbench serve-rewards``.

A reward is a verdict and nothing else: the response is judged by ``tasks.registry.judge``,
the one function ``execbench run`` and ``execbench score`` use, against the instance that
the row's ground truth carries. So the same extractor, parser, type-aware comparison and
sandbox decide a reward as decide a benchmark's number, and an answer is never run in a
prediction task; a task that runs code (input prediction runs the program on the parsed
arguments, bug repair the candidate) runs it in the sandbox, one untrusted unit per
response.

The ground truth is self-contained JSON (``truth_text``): the instance record and, for a
task that runs code, its suite's sandbox limits. A trainer needs neither the suite folder
nor a build, and a row cannot name files or settings of its own beyond what an instance
record may hold.

Partial credit is a named option (``OPTIONS``): ``verdict`` (1 for a correct answer, else
0) serves every task; the others serve the tasks whose verdict carries the part they read
(the coverage task's Jaccard, the simulation's share of right values, its coherence or its
output, bug repair's share of passing tests, CodeSense's string match).
"""

from __future__ import annotations

import atexit
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from execbench.registry import Registry, UnknownName
from execbench.sandbox.pool import Limits
from execbench.tasks.base import ERROR, SCORING_ERROR, UNPARSABLE, Instance, InstanceError, Score
from execbench.tasks.registry import get_task, judge

if TYPE_CHECKING:
    from execbench.sandbox.pool import Sandbox

TRUTH_SCHEMA = 1
"""The version of the ground-truth JSON ``truth_text`` writes."""
MAX_TRUTH_CHARS = 50_000_000
"""A ground truth longer than this is refused unread (a sent label is a client's to forge)."""
CACHED_TRUTH_CHARS = 64_000
"""Ground truths up to this long are kept read (``_read_text``); longer ones are read anew."""
CACHED_TRUTH_BYTES = 128 * 1024 * 1024
"""What the kept ground truths may cost in all, as ``_cost`` estimates it."""
TRUTH_KEYS = frozenset({"schema", "instance", "limits"})
"""The keys of a ground truth record; any other is refused, not carried along."""
MAX_LIMITS = {"cpu_seconds": 600.0, "wall_seconds": 3600.0, "memory_mb": 65_536,
              "stdout_bytes": 1 << 30, "file_bytes": 1 << 32, "recursion_limit": 100_000,
              "max_steps": 10**12}
"""The largest sandbox limits a ground truth may ask for (a sent label is a client's to
forge; exported suites sit far below)."""
MAX_SANDBOXES = 4
"""Distinct sets of limits a rewarder without a closed set (``limits=None``) starts pools
for, as its rows first name them: each keeps a pool of warm workers."""


class RewardError(ValueError):
    """A ground truth, a reward option or a request that cannot be scored; the message
    says which and why in one line."""


@dataclass(frozen=True)
class RewardOption:
    description: str
    tasks: frozenset[str] | None
    """The tasks it serves; None for every task."""
    read: Callable[[Score], float]


def _verdict(score: Score) -> float:
    return 1.0 if score.correct else 0.0


def _partial(score: Score) -> float:
    """The verdict's partial credit; a response without one (unreadable) earns nothing
    more than its verdict."""
    return score.score if score.score is not None else _verdict(score)


def _flag(key: str) -> Callable[[Score], float]:
    return lambda score: 1.0 if score.extra.get(key) is True else 0.0


def _coherent(score: Score) -> float:
    return 1.0 if str(score.extra.get("class", "")).startswith("coherent") else 0.0


OPTIONS: Registry[RewardOption] = Registry("reward option")
"""Every reward option by name (``--reward``, ``reward=``)."""
OPTIONS.register("verdict", RewardOption("1 for a correct answer, else 0", None, _verdict))
OPTIONS.register("jaccard", RewardOption(
    "the Jaccard similarity of the lines listed and the lines run", frozenset({"coverage"}),
    _partial))
OPTIONS.register("properties", RewardOption(
    "the share of the simulation's values (and its output) that are right",
    frozenset({"simulation"}), _partial))
OPTIONS.register("coherence", RewardOption(
    "1 for a coherent simulation, right output or not", frozenset({"simulation"}), _coherent))
OPTIONS.register("output", RewardOption(
    "1 for the simulation's right output, coherent or not", frozenset({"simulation"}),
    _flag("output_right")))
OPTIONS.register("tests", RewardOption(
    "the share of the problem's tests the repaired function passes",
    frozenset({"bug-repair"}), _partial))
OPTIONS.register("string_match", RewardOption(
    "1 when the answer matches the truth as CodeSense compares them (normalised text)",
    frozenset({"statement", "block", "loop", "branch", "alias"}), _flag("string_match")))


@dataclass(frozen=True)
class RewardChoice:
    """Which option rewards which task: one option for every task it serves (a row of
    another task gets no reward, ``None``), or one per task named (the others get
    ``verdict``)."""

    every: str | None
    by_task: Mapping[str, str]

    @classmethod
    def parse(cls, given: str | Mapping[str, str] | None) -> RewardChoice:
        """``None`` or ``""`` (verdict), ``"jaccard"``, ``"coverage=jaccard,simulation=
        coherence"`` or a mapping; an unknown option or one named for a task it does not
        serve is refused."""
        if given is None or given == "":
            return cls("verdict", {})
        if isinstance(given, str) and "=" not in given:
            _option(given.strip())
            return cls(given.strip(), {})
        pairs = given.items() if isinstance(given, Mapping) else (
            item.split("=", 1) for item in given.split(",") if item.strip())
        by_task: dict[str, str] = {}
        for task, name in pairs:
            task, name = task.strip(), name.strip()
            try:
                get_task(task)
            except UnknownName as exc:
                raise RewardError(str(exc)) from None
            option = _option(name)
            if option.tasks is not None and task not in option.tasks:
                raise RewardError(f"reward option {name!r} does not serve task {task!r} "
                                  f"(it serves {', '.join(sorted(option.tasks))})")
            by_task[task] = name
        return cls(None, by_task)

    def option(self, task: str) -> tuple[str, RewardOption] | None:
        """The option that rewards ``task``'s rows, or None where it does not apply."""
        name = self.by_task.get(task, "verdict") if self.every is None else self.every
        option = OPTIONS.get(name)
        return None if option.tasks is not None and task not in option.tasks else (name, option)

    def describe(self) -> str:
        if self.every is not None:
            return self.every
        return ",".join(f"{task}={name}" for task, name in sorted(self.by_task.items())) \
            or "verdict"


def _option(name: str) -> RewardOption:
    try:
        return OPTIONS.get(name)
    except UnknownName as exc:
        raise RewardError(str(exc)) from None


# --------------------------------------------------------------------------- ground truth


@dataclass(frozen=True)
class Truth:
    """A row's ground truth, read: the instance and the limits its task runs code under."""

    instance: Instance
    limits: Limits | None


def truth_text(instance: Instance, limits: Limits) -> str:
    """The ground truth of ``instance`` as one JSON text, all a reward needs."""
    record: dict[str, Any] = {"schema": TRUTH_SCHEMA, "instance": instance.to_record()}
    if get_task(instance.task).judging.needs_sandbox:
        record["limits"] = asdict(limits)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def read_truth(given: str | Mapping[str, Any]) -> Truth:
    """A ground truth as ``truth_text`` wrote it (or its parsed JSON); ``RewardError`` for
    anything else."""
    if isinstance(given, str):
        return _read_text(given) if len(given) <= CACHED_TRUTH_CHARS else _read_uncached(given)
    if isinstance(given, Mapping):
        return _read_record(given)
    raise RewardError(f"a ground truth is a JSON text, not a {type(given).__name__}")


def _cost(text: str) -> int:
    """The memory a read ground truth may hold, from its text: its characters, and one
    Python object of about 64 bytes for each list or object it opens (``[],`` is 3
    characters of text and 64 bytes read)."""
    return len(text) + 64 * (text.count("[") + text.count("{"))


class _TruthCache:
    """Ground truths read, kept by their text while their estimated cost (``_cost``) in
    all stays within ``limit``, the least recently used dropped first: a trainer scores
    several responses to each row, and a batch repeats rows, but what is kept is bounded
    in bytes whatever the labels hold."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._kept: OrderedDict[str, tuple[Truth, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def __call__(self, text: str) -> Truth:
        with self._lock:
            kept = self._kept.get(text)
            if kept is not None:
                self._kept.move_to_end(text)
                return kept[0]
        truth, cost = _read_uncached(text), _cost(text)
        if cost <= self._limit:
            with self._lock:
                if text not in self._kept:
                    self._kept[text] = (truth, cost)
                    self._total += cost
                while self._total > self._limit:
                    self._total -= self._kept.popitem(last=False)[1][1]
        return truth

    def cache_clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._total = 0


_read_text = _TruthCache(CACHED_TRUTH_BYTES)


def _read_uncached(text: str) -> Truth:
    if len(text) > MAX_TRUTH_CHARS:
        raise RewardError(f"ground truth longer than {MAX_TRUTH_CHARS:,} characters")
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise RewardError(f"ground truth is not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise RewardError("ground truth is not a JSON object")
    return _read_record(record)


def _read_record(record: Mapping[str, Any]) -> Truth:
    unknown = sorted(set(record) - TRUTH_KEYS)
    if unknown:
        raise RewardError(f"ground truth has unknown key {str(unknown[0])[:60]!r}")
    if record.get("schema") != TRUTH_SCHEMA:
        raise RewardError(f"ground truth schema {record.get('schema')!r} is not "
                          f"{TRUTH_SCHEMA}; export the suite again with this execbench")
    body = record.get("instance")
    if not isinstance(body, dict):
        raise RewardError("ground truth has no instance record")
    try:
        instance = Instance.from_record(body)
        task = get_task(instance.task)
    except (InstanceError, UnknownName) as exc:
        raise RewardError(f"ground truth: {exc}") from None
    limits = None
    if task.judging.needs_sandbox:
        given = record.get("limits")
        if not isinstance(given, dict):
            raise RewardError(f"ground truth of a {instance.task} instance has no limits")
        limits = limits_of(given, "ground truth limits")
    return Truth(instance, limits)


def limits_of(given: Mapping[str, Any], what: str) -> Limits:
    """Sandbox limits from their fields, each a positive number within ``MAX_LIMITS``;
    ``RewardError`` names ``what`` and the field that is wrong."""
    unknown = sorted(set(given) - set(MAX_LIMITS))
    if unknown:
        raise RewardError(f"{what}: unknown {', '.join(unknown)}")
    for name, value in given.items():
        if not isinstance(value, int | float) or isinstance(value, bool) \
                or not 0 < value <= MAX_LIMITS[name]:
            raise RewardError(f"{what}: {name} must be a positive number "
                              f"up to {MAX_LIMITS[name]:,}")
    try:
        return Limits(**given)
    except (TypeError, ValueError, OverflowError) as exc:
        raise RewardError(f"{what}: {exc}") from None


def parse_limits(text: str) -> Limits:
    """Sandbox limits written ``cpu_seconds=4,wall_seconds=20,memory_mb=2048`` (the fields
    of a ground truth's limits; the others keep their defaults)."""
    given: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, equals, value = item.partition("=")
        try:
            given[name.strip()] = json.loads(value) if equals else None
        except ValueError:
            raise RewardError(f"limits {text!r}: {name.strip()} is not a number") from None
    return limits_of(given, f"limits {text!r}")


# --------------------------------------------------------------------------- scoring


def completion_text(completion: Any) -> str | None:
    """A completion as text: a string, or the content of the last message of a
    conversational completion (TRL's ``[{"role": "assistant", "content": ...}]``)."""
    if completion is None or isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    if not isinstance(completion, Sequence):
        raise RewardError(f"a completion is a string or chat messages, not "
                          f"{type(completion).__name__}")
    # a message without readable text (no content, odd parts) is no answer, scored so
    last = completion[-1] if completion and isinstance(completion[-1], Mapping) else {}
    content = last.get("content")
    if isinstance(content, list):  # content parts: their text, in order
        content = "".join(part.get("text", "") for part in content
                          if isinstance(part, Mapping) and isinstance(part.get("text"), str))
    return content if isinstance(content, str) else None


@dataclass(frozen=True)
class Reward:
    """One response's reward and the verdict it rests on."""

    value: float | None
    """None where the chosen option does not serve the row's task."""
    score: Score
    task: str
    option: str | None

    @property
    def parsed(self) -> bool:
        return self.score.verdict not in (UNPARSABLE, SCORING_ERROR, ERROR)


class Rewarder:
    """Scores responses against ground truths with one reward choice. Holds a sandbox for
    each set of limits the rows name, started when a row first needs it; thread-safe, and a
    context manager (``close`` stops the sandboxes).

    ``limits`` closes the sets it serves: a row naming any other is refused, so rows (a
    client's to forge, behind ``serve-rewards``) can neither widen the limits nor start a
    pool beyond those. Without it (a trainer's own rows, in its process) a row's limits
    start a pool, up to ``MAX_SANDBOXES`` of them."""

    def __init__(self, reward: str | Mapping[str, str] | None = None, *,
                 workers: int | None = None, limits: Iterable[Limits] | None = None) -> None:
        self.choice = RewardChoice.parse(reward)
        self.workers = workers
        self.served: frozenset[Limits] | None = None if limits is None else frozenset(limits)
        """The closed set of limits rows may name; None: any within ``MAX_LIMITS``."""
        self._sandboxes: dict[Limits, Sandbox] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> Rewarder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            sandboxes, self._sandboxes = list(self._sandboxes.values()), {}
        for sandbox in sandboxes:
            sandbox.close()

    def read(self, truth: str | Mapping[str, Any] | Truth) -> Truth:
        """A ground truth read, and its limits checked against the closed set."""
        read = truth if isinstance(truth, Truth) else read_truth(truth)
        if self.served is not None and read.limits is not None \
                and read.limits not in self.served:
            raise RewardError("ground truth limits are not among the sets served here "
                              "(serve-rewards --suite names the suite a row comes from)")
        return read

    def _sandbox(self, limits: Limits | None) -> Sandbox | None:
        if limits is None:
            return None
        with self._lock:
            sandbox = self._sandboxes.get(limits)
            if sandbox is None:
                from execbench.sandbox.pool import Sandbox

                if self.served is None and len(self._sandboxes) >= MAX_SANDBOXES:
                    raise RewardError(f"the rows ask for more than {MAX_SANDBOXES} sets of "
                                      "sandbox limits; export them from fewer suites")

                sandbox = self._sandboxes[limits] = Sandbox(self.workers, limits)
            return sandbox

    def reward(self, truth: str | Mapping[str, Any] | Truth, response: Any) -> Reward:
        """The reward of one response; ``RewardError`` for a ground truth or completion
        that is not one."""
        read = self.read(truth)
        score = judge(read.instance, completion_text(response), self._sandbox(read.limits))
        chosen = self.choice.option(read.instance.task)
        if chosen is None:
            return Reward(None, score, read.instance.task, None)
        name, option = chosen
        return Reward(option.read(score), score, read.instance.task, name)

    def rewards(self, truths: Iterable[str | Mapping[str, Any] | Truth],
                responses: Iterable[Any]) -> list[Reward]:
        """The rewards of a batch, in order. Every ground truth is read first, so a bad one
        fails the batch before anything runs; rows whose task runs code are scored
        concurrently (each in its own sandbox unit), the others in this thread."""
        read = [self.read(truth) for truth in truths]
        answers = list(responses)
        if len(read) != len(answers):
            raise RewardError(f"{len(answers)} responses for {len(read)} ground truths")
        results: list[Reward | None] = [None] * len(read)
        ran = [i for i, truth in enumerate(read) if truth.limits is not None]
        if ran:
            with ThreadPoolExecutor(max_workers=min(len(ran), 32)) as pool:
                for i, done in zip(ran, pool.map(
                        lambda i: self.reward(read[i], answers[i]), ran), strict=True):
                    results[i] = done
        for i, truth in enumerate(read):
            if results[i] is None:
                results[i] = self.reward(truth, answers[i])
        return [result for result in results if result is not None]


_SHARED: dict[str, Rewarder] = {}
_SHARED_LOCK = threading.Lock()


def _shared(reward: str | Mapping[str, str] | None) -> Rewarder:
    """One rewarder per reward choice in this process (verl calls ``compute_score`` row by
    row, so its sandboxes must outlive a call); closed at exit."""
    key = RewardChoice.parse(reward).describe()
    with _SHARED_LOCK:
        if key not in _SHARED:
            if not _SHARED:
                atexit.register(_close_shared)
            _SHARED[key] = Rewarder(reward)
        return _SHARED[key]


def _close_shared() -> None:
    for rewarder in _SHARED.values():
        rewarder.close()
    _SHARED.clear()


# --------------------------------------------------------------------------- trainers


def compute_score(data_source: str, solution_str: str, ground_truth: str,
                  extra_info: dict[str, Any] | None = None,
                  reward: str | Mapping[str, str] | None = None, **_: Any) -> dict[str, float]:
    """verl's custom reward function (``custom_reward_function.path`` to this module,
    ``name: compute_score``; ``reward_kwargs: {reward: ...}`` picks an option). Returns
    ``score`` (the reward) with ``correct`` and ``parsed`` as 0/1 beside it."""
    done = _shared(reward).reward(ground_truth, solution_str)
    if done.value is None:
        raise RewardError(f"reward option {RewardChoice.parse(reward).describe()!r} does not "
                          f"serve task {done.task!r}; name one per task, e.g. "
                          f"'{done.task}=verdict'")
    return {"score": done.value, "correct": float(done.score.correct),
            "parsed": float(done.parsed)}


class TRLReward:
    """A reward function for TRL's trainers (GRPO's ``reward_funcs``): called with the
    batch's ``prompts``, ``completions`` and the dataset's other columns, it returns one
    reward per completion, ``None`` for a row the chosen option does not serve. The ground
    truth is the ``ground_truth`` column (the ``hf`` and ``jsonl`` exports) or
    ``reward_model["ground_truth"]`` (the ``verl`` export)."""

    def __init__(self, reward: str | Mapping[str, str] | None = None, *,
                 rewarder: Rewarder | None = None) -> None:
        self.rewarder = rewarder or Rewarder(reward)
        self.__name__ = f"execbench_{self.rewarder.choice.describe()}"

    def __call__(self, prompts: list[Any] | None = None, completions: list[Any] | None = None,
                 ground_truth: list[Any] | None = None,
                 reward_model: list[Mapping[str, Any]] | None = None,
                 **_: Any) -> list[float | None]:
        if completions is None:
            raise RewardError("no completions given")
        if ground_truth is None:
            if reward_model is None:
                raise RewardError("the dataset has no ground_truth column (nor verl's "
                                  "reward_model); export it with `execbench export`")
            ground_truth = [row["ground_truth"] for row in reward_model]
        return [done.value for done in self.rewarder.rewards(ground_truth, completions)]

    def close(self) -> None:
        self.rewarder.close()
