"""A run folder's files, read and written here only: ``samples.jsonl`` (one :class:`Sample`
per line, appended as each is scored), ``run.json`` (the settings, the values a resume must
find unchanged, and one entry per invocation) and ``results.json`` (:class:`Results`).

Reports read runs through this module, without the generation engine. Whole files are
replaced atomically (:func:`execbench.jsonfiles.write_atomic`), so a crash leaves the old
file or the new one; the sample log is only appended to, a flushed line per sample, and a
final line cut off by a crash is dropped when a run resumes.

``results.json`` (:class:`Results`), keys in this order::

    schema_version, execbench_version
    run                 the run's settings (RunConfig.record()) with run_dir, suite_sha256
    counts              instances, samples, expected_samples, verdicts {verdict: n},
                        truncated, refused
    metrics             per task: pass@k, verdicts, per-source blocks and per-category
                        blocks of the task's breakdowns (metrics.summarize)
    usage               requests, retries, tokens, latency percentiles, wall time, cost
    sessions            each invocation: started, ended, seconds, outcome, execbench_version,
                        python, host, command
    task_metrics        per task, the task's own summary (only tasks that give one; the
                        key is absent when none does)
    paired_metrics      per pairing of two tasks both run (absent when none)
    declared_metrics    [{task, family, name, path, ...}]: where each task's numbers are
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import socket
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import execbench.import_guard  # noqa: F401 - first: a folder hiding the package, in one line
from execbench import SCHEMA_VERSION, __version__
from execbench.json_types import JSONObject
from execbench.jsonfiles import dumps, file_sha256, utf8, write_atomic
from execbench.kept import Kept
from execbench.models.base import GenerateConfig, Generation
from execbench.models.cards import CardError, ModelDates
from execbench.results import DeclaredMetric, Paired, Session, TaskMetrics, Usage
from execbench.settings import SettingError, at_least_one
from execbench.tasks.base import Instance, Score
from execbench.tasks.protocol import FIXED, SHIPPED, SHOT_PICKS, STYLES, Protocol
from execbench.text_safety import visible

SAMPLES = "samples.jsonl"
RUN_CONFIG = "run.json"
RESULTS = "results.json"

PINNED = ("suite_sha256", "model", "model_args", "shots", "temperature", "top_p",
          "max_tokens", "seed", "protocol", "model_dates")
"""Settings that change what a sample means: resuming with other values would mix runs.
The endpoint is not one of them: the same model may come back at another host or port (a
scheduler's usual case), and each sample records the endpoint that answered it; run.json
lists every base URL the run used (``base_urls``). The model's dates (``model_dates``)
say which model answered: they are pinned where given, and absent where not, so that runs
without them keep their bytes and runs pinned before they existed resume."""
SUITE_FILES = ("instances.jsonl", "manifest.json")
"""What marks a folder as a suite (``suite.INSTANCES``, ``suite.MANIFEST``): a run is never
written into one."""
RESUME_REMEDY = "use a new --out folder (or the same settings to resume)"
"""What a refusal to resume tells the user to do instead."""


class RunError(Exception):
    """The run cannot start or resume (bad suite, conflicting earlier run)."""


MAX_SHOTS = 3
"""The most worked examples a prompt may show (CodeSense's abstract prompts use three)."""


@dataclass
class RunConfig:
    suite: str
    model: str
    n: int = 1
    shots: int = 0
    limit: int | None = None
    """At most this many instances per task (the first ones in suite order)."""
    tasks: list[str] | None = None
    base_url: str | None = None
    model_args: dict[str, str] = field(default_factory=dict)
    retry_errors: bool = False
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    price_input: float | None = None
    """Price per million input tokens, for the cost estimate (not pinned: prices change)."""
    price_output: float | None = None
    """Price per million output tokens."""
    prompt: str = SHIPPED
    """The prompt style (``--prompt``, ``protocol.STYLES``)."""
    shot_pick: str = FIXED
    """Which worked examples ``shots`` shows (``--shot-pick``, ``protocol.SHOT_PICKS``)."""
    system: str | None = None
    """A system message sent before every prompt (``--system``)."""
    templates: dict[str, str] = field(default_factory=dict)
    """Template texts replacing the shipped prompts, by task (``protocol.EVERY_TASK`` for
    all): kept whole in ``run.json``, so that ``show`` and the page render the prompts
    that were sent."""
    model_release: str | None = None
    """The model's release date, a day or a month (``--model-release``, ``models.cards``):
    the release-date report places the run by it."""
    model_cutoff: str | None = None
    """The model's training cutoff, a day or a month (``--model-cutoff``): the
    cutoff-split report tells instances dated after it from those on or before."""

    def protocol(self) -> Protocol:
        """How the run asks its questions: every prompt it sends or shows is made with it."""
        return Protocol(style=self.prompt, shots=self.shots, shot_pick=self.shot_pick,
                        system=self.system, templates=self.templates,
                        seed=self.generate.seed or 0)

    def record(self) -> dict[str, Any]:
        """The one serialisation of a run's settings: ``run.json`` holds it, with the
        pinned values apart, and ``results.json`` repeats it under ``run``. Settings left
        unset (None) are the provider's, which ``sampling_defaults`` states in words."""
        # The providers' table lives with the models; reading a run needs none of them.
        from execbench.models import sampling_defaults

        return {"model": self.model, "suite": str(Path(self.suite).resolve()), "n": self.n,
                "shots": self.shots, "limit": self.limit, "tasks": self.tasks,
                "base_url": self.base_url, "model_args": self.model_args,
                "generate": asdict(self.generate), "price_input": self.price_input,
                "price_output": self.price_output, **self._asked(), **self._dated(),
                "sampling_defaults": sampling_defaults(self.model)}

    def _asked(self) -> dict[str, Any]:
        """How the run asks, where not as shipped (``prompt``, ``shot_pick``, ``system``,
        ``templates``): a run asked as shipped records what it always did."""
        asked = {"prompt": self.prompt, "shot_pick": self.shot_pick, "system": self.system,
                 "templates": self.templates}
        shipped: dict[str, Any] = {"prompt": SHIPPED, "shot_pick": FIXED, "system": None,
                                   "templates": {}}
        return {key: value for key, value in asked.items() if value != shipped[key]}

    def dates(self) -> ModelDates:
        """The model's release date and training cutoff, where the run was given them."""
        return ModelDates(self.model_release, self.model_cutoff)

    def _dated(self) -> dict[str, str]:
        """The model's dates where given: a run without them records what it always did."""
        dated = {"model_release": self.model_release, "model_cutoff": self.model_cutoff}
        return {key: value for key, value in dated.items() if value is not None}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RunConfig:
        """Read ``record()``'s form, or a ``run.json`` written before it (which kept the
        model, shots, base URL and model args only among the pinned values)."""
        pinned = record.get("pinned", {})

        def value(key: str) -> Any:
            return record[key] if key in record else pinned[key]

        dates = _dates(record)
        return cls(suite=record["suite"], model=value("model"), n=record["n"],
                   shots=value("shots"), limit=record["limit"], tasks=record["tasks"],
                   base_url=record.get("base_url", pinned.get("base_url")),
                   model_args=value("model_args"),
                   generate=GenerateConfig(**record["generate"]),
                   price_input=record.get("price_input"), price_output=record.get("price_output"),
                   prompt=record.get("prompt", SHIPPED),
                   shot_pick=record.get("shot_pick", FIXED), system=record.get("system"),
                   templates=_templates(record.get("templates")),
                   model_release=dates.release, model_cutoff=dates.cutoff)

    def validate(self) -> None:
        """Raise ``SettingError`` for settings no run can use, before anything is written."""
        at_least_one({"n": self.n, "limit": self.limit})
        if self.shots not in range(MAX_SHOTS + 1):
            raise SettingError(f"{{0}} must be 0 to {MAX_SHOTS}", "shots")
        if self.prompt not in STYLES:
            raise SettingError(f"{{0}} must be one of {', '.join(STYLES)}", "prompt")
        if self.shot_pick not in SHOT_PICKS:
            raise SettingError(f"{{0}} must be one of {', '.join(SHOT_PICKS)}", "shot_pick")
        if self.shot_pick != FIXED and not self.shots:
            raise SettingError("{0} picks the examples {1} shows: give {1} 1 or more",
                               "shot_pick", "shots")
        self.generate.validate()
        if (self.price_input is None) != (self.price_output is None):
            raise SettingError("{0} and {1} go together (a cost needs both)", "price_input",
                               "price_output")
        if any(price is not None and price < 0 for price in (self.price_input,
                                                             self.price_output)):
            raise SettingError("{0} and {1} must be >= 0", "price_input", "price_output")
        try:
            ModelDates.checked(self.model_release, self.model_cutoff,
                               ("model_release", "model_cutoff"))
        except CardError as exc:
            raise SettingError(str(exc).replace("{", "{{").replace("}", "}}")) from None

    def decoding_stated(self, out: Path | None) -> RunConfig:
        """The run with the temperature it samples at said, never left to the provider
        (OpenAI's default is 1, vLLM's the model's generation config): with one sample
        per instance and no ``temperature``, greedy (0); with several, or with a ``top_p``
        alone, refused, since pass@k or nucleus sampling at a temperature no one chose
        compares nothing. A resume of the run in ``out`` takes the temperature it pinned
        (None for one made before this rule), so it goes on as it began. A model that takes
        no temperature but its own keeps None: a ``reference/`` one (it samples nothing),
        an OpenAI reasoning model, Anthropic with extended thinking
        (``Provider.own_temperature``)."""
        if self.generate.temperature is not None:
            return self
        pinned, temperature = _pinned_temperature(out)
        if pinned:
            return self._at(temperature)
        if self._own_temperature():
            return self
        if self.n > 1 or self.generate.top_p is not None:
            raise SettingError("{0} above 1 or {1} needs {2}: 0.2 to report pass@1 as CRUXEval "
                               "does, 0.8 for pass@5 and beyond", "n", "top_p", "temperature")
        return self._at(0.0)

    def _at(self, temperature: float | None) -> RunConfig:
        return replace(self, generate=replace(self.generate, temperature=temperature))

    def _own_temperature(self) -> bool:
        """The model takes no temperature but its own (``decoding_stated``); so too a
        provider that states no sampling, or a broken plugin's (the run says why when it
        starts)."""
        from execbench.models import MODELS
        from execbench.plugins import PluginError

        provider = self.model.partition("/")[0]
        try:
            found = MODELS.get(provider) if provider in MODELS else None
        except PluginError:
            return True
        return found is None or "temperature" not in dict(found.sampling) or \
            found.own_temperature(self.model, self.model_args)

    def pinned(self, suite_sha256: str) -> dict[str, Any]:
        """What a resume or a re-score must find unchanged (``PINNED``)."""
        values = {"model": self.model, "base_url": self.base_url,
                  "model_args": self.model_args, "shots": self.shots,
                  **asdict(self.generate), "suite_sha256": suite_sha256,
                  "protocol": self.protocol().pinned(),
                  "model_dates": self.dates().pinned()}
        return {k: values[k] for k in PINNED if k != "model_dates" or values[k] is not None}


def _dates(record: dict[str, Any]) -> ModelDates:
    """``run.json``'s model dates (absent: none), each read as ``--model-release`` reads
    it; another's run folder may hold anything there: ``ValueError``, which reading the
    folder reports."""
    try:
        dates = ModelDates.checked(record.get("model_release"), record.get("model_cutoff"),
                                   ("model_release", "model_cutoff"))
    except CardError as exc:
        raise ValueError(str(exc)) from None
    return dates


def _templates(found: Any) -> dict[str, str]:
    """``run.json``'s templates, as task name -> text (another's run folder may hold
    anything there: ``TypeError``, which reading the folder reports)."""
    if found is None:
        return {}
    if not isinstance(found, dict) or not all(isinstance(key, str) and isinstance(text, str)
                                              for key, text in found.items()):
        raise TypeError("templates should map task names to template texts")
    return found


def prompt_hash(messages: list[dict[str, str]]) -> str:
    """What a sample keeps of its prompt (logs stay small; reports render it again)."""
    return hashlib.sha256(utf8(dumps({"messages": messages}))).hexdigest()[:16]


@dataclass
class Sample:
    """One answer to one instance: a line of ``samples.jsonl``. (Not frozen: a frozen
    dataclass sets each of its 25 fields through ``object.__setattr__``, which nearly
    doubled the cost of making one, paid for every sample on the generation path.)"""

    instance_id: str
    task: str
    source: str
    sample: int
    """Which of the run's ``n`` samples of the instance this is."""
    seed: int | None
    prompt_hash: str
    response: str | None
    reasoning: str | None
    answer: str | None
    verdict: str
    correct: bool
    score: float | None
    detail: str | None
    extra: JSONObject | None
    """What the task adds to a verdict (``failure``, a coherence class, ...)."""
    input_tokens: int | None
    output_tokens: int | None
    latency: float | None
    attempts: int | None
    """Requests sent for it; 0 for a sample refused before sending (see :attr:`unsent`)."""
    error: str | None
    """Why no answer came (the verdict is then ``error``)."""
    stop_reason: str | None = None
    truncated: bool = False
    refused: bool = False
    refusal: str | None = None
    endpoint: str | None = None
    """The last five appeared later than the others: older logs lack them, and read so."""
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def of(cls, instance: Instance, sample: int, seed: int | None, phash: str,
           generation: Generation, score: Score) -> Sample:
        """The record of ``generation``, the ``sample``-th answer to ``instance``."""
        return cls(instance_id=instance.id, task=instance.task, source=instance.source,
                   sample=sample, seed=seed, prompt_hash=phash, response=generation.text,
                   reasoning=generation.extra.get("reasoning"), **_score_fields(score),
                   stop_reason=generation.stop_reason, truncated=generation.truncated,
                   refused=generation.refused, refusal=generation.extra.get("refusal"),
                   input_tokens=generation.input_tokens, output_tokens=generation.output_tokens,
                   latency=round(generation.latency, 4), attempts=generation.attempts,
                   endpoint=generation.endpoint, error=generation.error)

    @property
    def unsent(self) -> bool:
        """Refused before any request (its prompt is over the model's context): no answer
        and no request spent, so a resumed run checks it again."""
        return self.attempts == 0 and self.error is not None

    def kept(self) -> Kept:
        """What results keep of the sample; the strings whose few values repeat over a
        whole log (task, source, verdict, endpoint) are one object each, since a run holds
        one of these per sample."""
        return Kept(instance_id=self.instance_id, task=sys.intern(self.task),
                    source=sys.intern(self.source), sample=self.sample,
                    verdict=sys.intern(self.verdict), correct=self.correct, score=self.score,
                    extra=self.extra, latency=self.latency, attempts=self.attempts,
                    input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                    endpoint=None if self.endpoint is None else sys.intern(self.endpoint))

    def rescored(self, score: Score) -> Sample:
        """This sample with the verdict ``score`` gives (what re-scoring rewrites)."""
        return replace(self, **_score_fields(score))

    def to_record(self) -> dict[str, Any]:
        # its fields as they are (asdict would copy ``extra`` deeply, for every sample)
        return dict(vars(self))

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Sample:
        return cls(**{f.name: record[f.name] for f in fields(cls) if f.name in record})


def _score_fields(score: Score) -> dict[str, Any]:
    return {"answer": score.answer, "verdict": score.verdict, "correct": score.correct,
            "score": score.score, "detail": score.detail, "extra": score.extra or None}


def repair_log(path: Path) -> None:
    """Cut a final line without its newline (the process died mid-write) off the log,
    looking back from the end a block at a time."""
    if not path.exists():
        return
    with path.open("r+b") as file:
        size = end = file.seek(0, os.SEEK_END)
        keep = 0
        while end > 0:
            start = max(0, end - (1 << 16))
            file.seek(start)
            cut = file.read(end - start).rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            end = start
        if keep != size:
            file.truncate(keep)


def _log_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """``samples.jsonl``'s complete, non-blank lines, numbered from 1 (a final line
    without its newline is left unread)."""
    if not path.exists():
        return
    with path.open("rb") as file:
        # binary lines end at newlines only: a record keeps U+0085 and U+2028 raw
        for number, line in enumerate(file, 1):
            if line.endswith(b"\n") and line.strip():
                yield number, line


def _parsed(path: Path, number: int, line: bytes) -> Sample:
    try:
        return Sample.from_record(json.loads(line.decode("utf-8", "replace")))
    except (ValueError, KeyError, TypeError):
        raise RunError(f"{path}:{number}: not a sample record; remove or fix that line and "
                       "run again") from None


def iter_samples(path: Path, repair: bool = False) -> Iterator[Sample]:
    """The samples logged so far, one at a time, the last record winning for each
    (instance, sample) (a resumed run logs a sample again after ``--retry-errors``).

    Two passes over the file: the first keeps only each key's last line number, so memory
    holds one small entry per sample, never the records. With ``repair``, a final line
    cut by a crash is cut off the file first."""
    if repair:
        repair_log(path)
    last: dict[tuple[str, int], int] = {}
    lines = final = 0
    for final, line in _log_lines(path):
        sample = _parsed(path, final, line)
        last[(sample.instance_id, sample.sample)] = final
        lines += 1
    unique = lines == len(last)
    for number, line in _log_lines(path):
        if number > final:  # appended since the first pass: not read in either
            return
        sample = _parsed(path, number, line)
        if unique or last.get((sample.instance_id, sample.sample)) == number:
            yield sample


def read_samples(path: Path, repair: bool = False) -> dict[tuple[str, int], Sample]:
    """All the samples logged so far by (instance, sample), for a run small enough to hold
    whole (tests, a few samples); what reads a run of any size takes :func:`iter_samples`."""
    return {(s.instance_id, s.sample): s for s in iter_samples(path, repair)}


class SampleLog:
    """``samples.jsonl`` open for appending: each call to :meth:`append` is one
    ``os.write`` on an append-only descriptor, so lines from one batch are never split."""

    def __init__(self, out: Path) -> None:
        self._fd = os.open(out / SAMPLES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, samples: list[Sample]) -> None:
        os.write(self._fd, utf8("".join([dumps(s.to_record()) + "\n" for s in samples])))

    def close(self) -> None:
        os.close(self._fd)


def rewrite_samples(out: Path, samples: Iterable[Sample]) -> None:
    """Replace the whole log (re-scoring) with ``samples`` in the order given, written as
    they come (the file is replaced once all are written)."""
    path = out / SAMPLES
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("wb") as file:
            for sample in samples:
                file.write(utf8(dumps(sample.to_record()) + "\n"))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_json(path: Path, record: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(record, indent=2, sort_keys=True) + "\n")


def _read_run_json(out: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((out / RUN_CONFIG).read_text(encoding="utf-8"))
    return record


def _pinned_temperature(out: Path | None) -> tuple[bool, Any]:
    """Whether the run in ``out`` pinned a temperature, and which; (False, None) where
    there is no readable run (a resume then checks the folder and says what is wrong) or
    it answered nothing (a new run takes such a folder over, with its own settings)."""
    if out is None or not (out / RUN_CONFIG).exists():
        return False, None
    try:
        if answered_nothing(out):
            return False, None
        pinned = _read_run_json(out).get("pinned", {})
    except (OSError, ValueError, AttributeError, RunError):
        return False, None
    return ("temperature" in pinned, pinned.get("temperature")) if isinstance(
        pinned, dict) else (False, None)


def check_out(out: Path) -> None:
    """Refuse an ``--out`` that holds something other than a run: samples written beside a
    suite's files would make it a folder of both (and the suite could not be rebuilt), and
    a folder of other files is most likely a mistyped path."""
    if not out.exists():
        return
    if not out.is_dir():
        raise RunError(f"--out {out} is a file, not a folder; choose a folder for the run")
    if any((out / name).exists() for name in SUITE_FILES):
        raise RunError(f"--out {out} is a suite folder (it has {SUITE_FILES[0]}); a run needs "
                       "a folder of its own: name a new one, or leave --out off for "
                       "runs/MODEL_SUITE_TIME")
    names = {path.name for path in out.iterdir()}
    if names and not names & {RUN_CONFIG, SAMPLES, RESULTS}:
        shown = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
        raise RunError(f"--out {out} holds other files ({shown}) and no run; choose an "
                       "empty or new folder")


def answered_nothing(out: Path) -> bool:
    """Whether the run in ``out`` has no answer logged (no log, or only failed requests):
    such a run pins nothing, so the next command may name other settings (the right URL
    after a dead one, a fixed model name) and take the folder over."""
    return all(sample.verdict == "error" for sample in iter_samples(out / SAMPLES))


def check_pinned(out: Path, pinned: dict[str, Any], remedy: str) -> dict[str, Any] | None:
    """The ``run.json`` of the run in ``out`` (None if there is none yet, or if it answered
    nothing), after refusing if any setting it pinned differs from ``pinned``: resuming
    would mix two runs in one log, and re-scoring would judge the logged answers against
    instances they were not given for. ``remedy`` ends the message with what the user can
    do instead."""
    if not (out / RUN_CONFIG).exists():
        return None
    earlier = _read_run_json(out)
    before = earlier.get("pinned", {})
    changed = [k for k in PINNED if before.get(k) != pinned.get(k)]
    if changed and answered_nothing(out):
        return None
    if changed:
        said = ", ".join(changed)
        if "model_dates" in changed:
            said += (f" (the run's: {_dates_said(before.get('model_dates'))}; given now: "
                     f"{_dates_said(pinned.get('model_dates'))})")
        raise RunError(f"{out} holds a run with different {said}; {remedy}")
    return earlier


def _dates_said(pinned: Any) -> str:
    """A pinned ``model_dates`` in words, for the refusal to resume."""
    if not isinstance(pinned, dict):
        return "none"
    return ", ".join(f"{key} {visible(str(pinned[key]), lines=False)}"
                     for key in ("release", "cutoff") if key in pinned) or "none"


def pin(out: Path, pinned: dict[str, Any], config: RunConfig) -> None:
    """Refuse to mix runs; record the run's scope, the widest asked for so far (a resume
    with fewer samples, a lower limit or fewer tasks does not hide what is logged)."""
    scope: dict[str, Any] = {"n": config.n, "limit": config.limit, "tasks": config.tasks}
    earlier = check_pinned(out, pinned, RESUME_REMEDY)
    if earlier is None and (out / RUN_CONFIG).exists():
        # a run that answered nothing, under other settings: its failed requests are not
        # this run's samples, and its sessions stay in run.json to say what was tried
        sessions = _read_run_json(out).get("sessions", [])
        (out / SAMPLES).unlink(missing_ok=True)
    else:
        sessions = [] if earlier is None else earlier.get("sessions", [])
    base_urls = [] if earlier is None else list(earlier.get("base_urls", [
        earlier["base_url"]] if earlier.get("base_url") else []))
    if config.base_url is not None and config.base_url not in base_urls:
        base_urls.append(config.base_url)
    prices = {"price_input": config.price_input, "price_output": config.price_output}
    if earlier is not None:
        if config.price_input is None and config.price_output is None:
            prices = {key: earlier.get(key) for key in prices}
        scope["n"] = max(config.n, earlier["n"])
        if config.limit is not None and earlier["limit"] is not None:
            scope["limit"] = max(config.limit, earlier["limit"])
        else:
            scope["limit"] = None
        if config.tasks is not None and earlier["tasks"] is not None:
            scope["tasks"] = sorted(set(config.tasks) | set(earlier["tasks"]))
        else:
            scope["tasks"] = None
    record = {"schema_version": SCHEMA_VERSION, "execbench_version": __version__,
              "pinned": pinned, **config.record(), **scope, **prices, "base_urls": base_urls,
              "sessions": sessions}
    _write_json(out / RUN_CONFIG, record)


def begin_session(out: Path) -> float:
    """Add this invocation to run.json's ``sessions`` and return when it began (a resumed
    run has several: their durations add up to the run's wall time, and each says which
    execbench, Python, host and command line it was)."""
    started = time.time()
    record = _read_run_json(out)
    record.setdefault("sessions", []).append({
        "started": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
        "ended": None, "seconds": None, "outcome": None, "execbench_version": __version__,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "host": socket.gethostname(), "command": shlex.join(sys.argv)})
    _write_json(out / RUN_CONFIG, record)
    return started


def end_session(out: Path, started: float, outcome: str) -> None:
    """Close the session :func:`begin_session` opened: when, after how long, and how."""
    record = _read_run_json(out)
    record["sessions"][-1].update(ended=datetime.now(UTC).isoformat(timespec="seconds"),
                                  seconds=round(time.time() - started, 3), outcome=outcome)
    _write_json(out / RUN_CONFIG, record)


def sessions(out: Path) -> list[dict[str, Any]]:
    """Each invocation of the run so far (``begin_session``'s entries)."""
    found: list[dict[str, Any]] = _read_run_json(out).get("sessions", [])
    return found


def not_a_run(folder: Path) -> str:
    """What ``folder`` is instead of a finished run, and the command that leads on from it
    (so that ``report``, ``show`` and ``score`` never send the user round in circles)."""
    if not folder.is_dir():
        return f"{folder}: no such folder"
    if any((folder / name).exists() for name in SUITE_FILES):
        return (f"{folder} is a suite, not a run: evaluate a model on it with "
                f"`execbench run --suite {folder} --model MODEL`")
    if (folder / RUN_CONFIG).exists():
        return (f"{folder}: its run has no results yet; run the same `execbench run` "
                f"command again to finish it, or `execbench score {folder}` for results "
                "from the samples logged so far")
    return f"{folder} is not a run folder (no {RUN_CONFIG})"


def stale_suite(out: Path) -> str | None:
    """Why the run's suite is not the one it was run on (gone, or changed since: rebuilt
    with other options, edited), or None. What ``show`` and ``report`` read from the
    suite (prompts, truths) is then not what the model was asked."""
    try:
        record = _read_run_json(out)
        suite, sha = Path(record["suite"]), record["pinned"]["suite_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    path = suite / SUITE_FILES[0]
    if not path.is_file():
        return f"{out}: its suite {suite} is gone; put it back to see prompts and truths"
    if file_sha256(path) != sha:
        return (f"{out}: its suite {suite} has changed since the run, so prompts and truths "
                f"shown are the new suite's; restore it (then `execbench score {out}` "
                "re-scores), or run again into a new --out folder")
    return None


def load_run_config(out: Path) -> RunConfig:
    """The configuration a run folder was made with."""
    path = out / RUN_CONFIG
    if not path.exists():
        raise RunError(not_a_run(out))
    try:
        return RunConfig.from_record(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as exc:
        raise RunError(f"{path} is not a run configuration this execbench reads ({exc!r}); "
                       "run again into a new --out folder") from None


@dataclass(frozen=True)
class SampleCounts:
    """``results.json``'s ``counts``."""

    instances: int
    samples: int
    expected_samples: int
    verdicts: dict[str, int]
    truncated: int | None
    """Answers cut off at the token limit; None in results written before it was counted."""
    refused: int | None


@dataclass(frozen=True)
class Results:
    """``results.json``: what a run found (the module docstring lists its keys)."""

    config: RunConfig
    run_dir: str
    suite_sha256: str
    counts: SampleCounts
    metrics: Mapping[str, TaskMetrics]
    usage: Usage
    sessions: tuple[Session, ...]
    declared_metrics: tuple[DeclaredMetric, ...]
    task_metrics: Mapping[str, Any] = field(default_factory=dict)
    """Each task's own summary (``Task.summarize``), as the task wrote it."""
    paired_metrics: Mapping[str, Paired] = field(default_factory=dict)

    @property
    def model(self) -> str:
        return self.config.model

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "execbench_version": __version__,
            "run": {**self.config.record(), "run_dir": self.run_dir,
                    "suite_sha256": self.suite_sha256},
            "counts": asdict(self.counts),
            "metrics": {task: block.to_record() for task, block in self.metrics.items()},
            "usage": self.usage.to_record(),
            "sessions": [session.to_record() for session in self.sessions]}
        if self.task_metrics:
            record["task_metrics"] = dict(self.task_metrics)
        if self.paired_metrics:
            record["paired_metrics"] = {name: paired.to_record()
                                        for name, paired in self.paired_metrics.items()}
        record["declared_metrics"] = [declared.to_record()
                                      for declared in self.declared_metrics]
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Results:
        """Read ``to_record``'s form, and that of results written before ``usage``,
        ``sessions``, ``task_metrics``, ``paired_metrics`` or a count existed (absent
        ones read as none)."""
        run = dict(record["run"])
        run_dir, suite_sha256 = run.pop("run_dir"), run.pop("suite_sha256")
        counts = record["counts"]
        return cls(config=RunConfig.from_record(run), run_dir=run_dir,
                   suite_sha256=suite_sha256,
                   counts=SampleCounts(**{"truncated": None, "refused": None, **counts}),
                   metrics={task: TaskMetrics.from_record(block)
                            for task, block in record["metrics"].items()},
                   usage=Usage.from_record(record.get("usage") or {"samples": counts["samples"]}),
                   sessions=tuple(Session.from_record(s) for s in record.get("sessions", [])),
                   declared_metrics=tuple(DeclaredMetric.from_record(m)
                                          for m in record.get("declared_metrics", [])),
                   task_metrics=record.get("task_metrics", {}),
                   paired_metrics={name: Paired.from_record(paired)
                                   for name, paired in record.get("paired_metrics", {}).items()})

    def for_tasks(self, tasks: Iterable[str]) -> Results:
        """These results seen through some of their tasks (``report --tasks``): the
        numbers of those tasks and of the pairings of two of them. Reports that read the
        run's log and suite read just these tasks' records (``reports.run_files``), since
        ``metrics`` names every task the log holds. Truncated and refused answers are
        counted over the whole run, so they become unknown here rather than wrong."""
        kept = set(tasks)
        return replace(
            self, metrics={task: block for task, block in self.metrics.items() if task in kept},
            task_metrics={task: block for task, block in self.task_metrics.items()
                          if task in kept},
            paired_metrics={name: paired for name, paired in self.paired_metrics.items()
                            if set(paired.tasks) <= kept},
            declared_metrics=tuple(declared for declared in self.declared_metrics
                                   if declared.task in kept),
            counts=replace(self.counts, truncated=None, refused=None))

    def write(self, out: Path) -> dict[str, Any]:
        """Write ``results.json`` and return its record."""
        record = self.to_record()
        _write_json(out / RESULTS, record)
        return record


def read_results(folder: Path) -> Results:
    """A run folder's ``results.json``, its ``run_dir`` the folder it was read from: the
    file names the folder the run was made in, which may have moved since, or never held
    it (reports read the run's samples from ``run_dir``)."""
    found = Results.from_record(json.loads((folder / RESULTS).read_text(encoding="utf-8")))
    return replace(found, run_dir=str(folder))
