"""``replay/FILE``: score answers made elsewhere, as a model whose replies are read from a
file (a JSONL of ``{"instance_id", "response"}`` lines, CRUXEval's ``generations.json``,
or lm-eval's ``--log_samples`` JSONL).

Being a model, a replay goes through the runner like any other: the run folder, resume,
``report``, ``show`` and ``score`` work on it unchanged. It samples nothing, so it keeps no
temperature (as ``reference/`` models), and it takes no seed. See :mod:`.answers` for the
shapes and their checks, :mod:`.matching` for how ids name instances, :mod:`.model` for
how each sample's answer is found.
"""

from __future__ import annotations

from execbench.models.base import ModelError
from execbench.models.provider import ModelKind, Provider
from execbench.models.replay.answers import SHAPES
from execbench.models.replay.model import ReplayModel

OPTIONS = ("format", "task", "source")
"""The ``-M`` keys a replay takes."""


def _create(name: str, rest: str, base_url: str | None, args: dict[str, str]) -> ReplayModel:
    from execbench.tasks import task_names

    if base_url:
        raise ModelError("replay models read a file and take no --model-base-url")
    unknown = sorted(set(args) - set(OPTIONS))
    if unknown:
        raise ModelError(f"replay models take -M {', '.join(OPTIONS)}; unknown: "
                         f"{', '.join(unknown)}")
    shape = args.get("format")
    if shape is not None and shape not in SHAPES:
        raise ModelError(f"-M format={shape} is not a shape replay reads; choose one of "
                         f"{', '.join(SHAPES)}")
    task = args.get("task")
    if task is not None and task not in task_names():
        raise ModelError(f"-M task={task} names no task; tasks: {', '.join(task_names())}")
    return ReplayModel(name, rest, shape, task, args.get("source"))


PROVIDER = Provider(
    _create,
    (ModelKind("replay/<file>", "answers made elsewhere, read from a file by instance and "
               "sample: JSONL of {instance_id, response}, CRUXEval's generations.json, "
               "lm-eval's --log_samples JSONL",
               model_args=f"format={'|'.join(SHAPES)} (default: told from the file), "
                          "task=TASK (ids may be a dataset's record ids, such as CRUXEval's "
                          "sample_0; a generations.json needs output or input), "
                          "source=NAME (only that source's records)"),),
    own_temperature=lambda name, options: True)
"""No sampling is stated: the answers were sampled elsewhere, however they were."""
