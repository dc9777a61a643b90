"""The after-call check watches every module of the runner's own code, so a program that
patches one (reached through ``sys.modules``) costs its runner."""

from __future__ import annotations

import pkgutil

from execbench import values
from execbench.sandbox import hygiene


def test_every_module_of_the_values_package_is_watched() -> None:
    """The runner encodes every result with ``execbench.values``: a module of it left out
    of ``RUNNER_MODULES`` could be patched by one unit and change the next one's record."""
    modules = {f"{values.__name__}.{found.name}" for found in pkgutil.iter_modules(values.__path__)}
    assert {values.__name__, *modules} <= set(hygiene.RUNNER_MODULES)
