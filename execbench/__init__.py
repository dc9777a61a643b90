"""execbench: benchmarks of how well language models reason about program execution."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("execbench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

SCHEMA_VERSION = 1
"""Version of every record execbench writes (instances, samples, manifests, results)."""
