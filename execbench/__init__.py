"""execbench: benchmarks of how well language models reason about program execution.

``execbench.build``, ``execbench.run`` and ``execbench.report`` (and their configs) are the
Python API (``execbench.api``), imported on first use, so that ``import execbench`` stays
as cheap as the sandbox's runners need it to be.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

SCHEMA_VERSION = 1
"""Version of every record execbench writes (instances, samples, manifests, results)."""

_API = ("build", "run", "report", "BuildConfig", "RunConfig", "ReportConfig", "GenerateConfig")


def __getattr__(name: str) -> Any:
    if name in _API:
        from execbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'execbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
