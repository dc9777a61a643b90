"""Benchmark tasks. Importing this package registers every built-in task."""

from execbench.tasks import prediction  # noqa: F401
from execbench.tasks.base import BuildContext, Score, SkipInstance, Task, get_task, task_names

__all__ = ["BuildContext", "Score", "SkipInstance", "Task", "get_task", "task_names"]
