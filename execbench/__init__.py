"""execbench: benchmarks of how well language models reason about program execution."""

__version__ = "0.1.0"

SCHEMA_VERSION = 1
"""Version of every record execbench writes (instances, samples, manifests, results)."""
