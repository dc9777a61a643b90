"""The CodeSense family (real-world execution semantics): statement, block, loop and branch
tasks built from facts about one call, and abstract values (``abstract``)."""

from execbench.tasks.codesense import tasks  # noqa: F401 - registers the tasks
