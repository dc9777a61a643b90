"""A run's two outside files as the reports that go back to them read them: its suite
(``run_suite``, ``run_instances``) and its ``samples.jsonl`` (``run_log``).

A report reads runs it did not make, and maybe files someone edited: one run's missing,
hostile or rebuilt file must cost that run a note naming the reason, never a traceback,
and never numbers from another suite than the one the run answered. So every layout that
reads past ``results.json`` reads here, with one policy: a suite is used only when its
instances still hash to what the run pinned (``Results.suite_sha256``), and a log only
while every record has the types the metrics count on. Both yield only the tasks the
results hold numbers for: every task the run answered, or those ``report --tasks`` kept
(``Results.for_tasks``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from execbench.kept import Kept
from execbench.rundir import SAMPLES, Results, RunError, Sample, iter_samples
from execbench.suite import MANIFEST, SuiteError, SuiteFile
from execbench.tasks.base import Instance


class Unread(Exception):
    """Why a run's suite or log cannot be used: a one-line reason, to show in a note."""


def run_suite(result: Results) -> SuiteFile | str:
    """The suite the run answered, or why it cannot be used: gone, unreadable, a manifest
    that is not a JSON object, or instances changed since the run."""
    folder = Path(result.config.suite)
    manifest = folder / MANIFEST
    try:
        record = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"suite {folder} not found"
    except OSError as exc:
        return f"suite {folder} not readable ({exc.strerror or exc})"
    except ValueError:
        return f"{manifest}: not JSON"
    if not isinstance(record, dict):
        return f"{manifest}: not a JSON object"
    try:
        suite = SuiteFile.open(folder)
    except SuiteError as exc:
        return str(exc)
    except OSError as exc:
        return f"suite {folder} not readable ({exc.strerror or exc})"
    if suite.sha256 != result.suite_sha256:
        return f"suite {folder} changed since the run"
    return suite


def run_instances(result: Results) -> Iterator[Instance]:
    """The instances of the run's suite, one at a time; ``Unread`` says why where the
    suite cannot be used or a line of it does not read."""
    suite = run_suite(result)
    if isinstance(suite, str):
        raise Unread(suite)
    try:
        yield from (instance for instance in suite.instances()
                    if instance.task in result.metrics)
    except SuiteError as exc:
        raise Unread(str(exc)) from None
    except OSError as exc:
        raise Unread(f"suite {suite.folder} not readable ({exc.strerror or exc})") from None


def _typed(sample: Sample) -> bool:
    """Whether a record has the types the metrics and the layouts count on (a ``correct``
    of ``"yes"`` would count as right, a text ``score`` would break a sum)."""
    score = sample.score
    return (isinstance(sample.instance_id, str) and isinstance(sample.task, str)
            and isinstance(sample.source, str) and isinstance(sample.verdict, str)
            and type(sample.sample) is int and type(sample.correct) is bool
            and (score is None or (isinstance(score, int | float)
                                   and not isinstance(score, bool)))
            and (sample.extra is None or isinstance(sample.extra, dict)))


def run_log(result: Results) -> Iterator[Kept]:
    """The run's samples as results count them (the last record of each sample winning,
    without the texts), streamed: a caller keeps what it needs of each. ``Unread`` says
    why where the log is missing, a line is not a sample record, or a record's fields have
    the wrong types."""
    log = Path(result.run_dir) / SAMPLES
    if not log.is_file():
        raise Unread(f"{log} not found")
    try:
        for sample in iter_samples(log):
            if not _typed(sample):
                raise Unread(f"{log}: a sample record of the wrong types "
                             f"({_describe(sample.instance_id)})")
            if sample.task in result.metrics:
                yield sample.kept()
    except RunError as exc:
        raise Unread(str(exc)) from None
    except TypeError:  # an id or index that cannot key a sample (a list, an object)
        raise Unread(f"{log}: a sample record of the wrong types") from None
    except OSError as exc:
        raise Unread(f"{log}: not readable ({exc.strerror or exc})") from None


def _describe(instance_id: object) -> str:
    """The record's instance, for the reason (a non-text id is named by its type)."""
    return f"instance {instance_id}" if isinstance(instance_id, str) else \
        f"an instance id of type {type(instance_id).__name__}"
