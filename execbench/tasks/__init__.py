"""Benchmark tasks. Importing this package registers every built-in task."""

from execbench.tasks import bugs, dexbench, generalization, prediction  # noqa: F401
from execbench.tasks.base import BuildContext, OptionError, Score, SkipInstance
from execbench.tasks.ces import simulation  # noqa: F401
from execbench.tasks.codesense import tasks as codesense  # noqa: F401
from execbench.tasks.registry import get_task, task_names
from execbench.tasks.roles import Task

__all__ = ["BuildContext", "OptionError", "Score", "SkipInstance", "Task", "get_task", "task_names"]
