"""Suites: building one (sources -> traced calls -> task instances) and reading one back.

A suite is a folder with ``instances.jsonl`` (one JSON record per instance) and
``manifest.json`` (what went in, what came out, what was skipped and why). The modules
hold the build's steps, each its own job: ``sources`` reads the programs, ``ground_truth``
traces their calls and ``budget`` says which traces a suite keeps, ``variants`` swaps
programs for mutants or known bugs, ``instances`` asks each task for its instances,
``build`` runs the steps chunk by chunk and writes the files, ``files`` reads them back.
Callers import the names below from ``execbench.suite``.
"""

from __future__ import annotations

from execbench.suite.build import build_suite
from execbench.suite.files import INSTANCES, MANIFEST, SuiteError, SuiteFile, load_suite
from execbench.suite.options import BuildOptions, Progress

__all__ = ["INSTANCES", "MANIFEST", "BuildOptions", "Progress", "SuiteError", "SuiteFile",
           "build_suite", "load_suite"]
