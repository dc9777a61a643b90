"""One line, not a riddle, when a folder named ``execbench`` hides this package.

Python takes any folder named ``execbench`` on ``sys.path`` (a script's own folder or
the current one comes first) for a namespace package, even one with no ``__init__.py``:
a clone of the repository beside a script, say. With an editable install, whose finder
comes after the path's, ``import execbench`` then gives that folder, empty of this
package's names, while its submodules still load from the install; the first of them to
import a name from the package failed with ``cannot import name 'SCHEMA_VERSION' from
'execbench' (unknown location)``, which names neither the folder nor the cause.

The modules that import names from the package itself import this module first, so that
whatever a script imports, the first of them ends the program with one line naming the
folder (``SystemExit``: nothing of execbench can work until the folder is out of the way).
"""

from __future__ import annotations

import sys


def shadowing_folders() -> list[str] | None:
    """The folders that stand for ``execbench`` in place of this package, or ``None`` when
    the package imported is this one (it has a file: its ``__init__.py``)."""
    top = sys.modules.get("execbench")
    if top is None or getattr(top, "__file__", None) is not None:
        return None
    return [str(folder) for folder in getattr(top, "__path__", [])]


def check() -> None:
    """End the program in one line if a folder hides the package (see the module doc)."""
    folders = shadowing_folders()
    if folders is not None:
        named = ", ".join(folders) or "a namespace package"
        raise SystemExit(f"error: {named} hides the installed execbench: a folder named "
                         "execbench in the current folder or on sys.path (a clone, say) is "
                         "taken for the package; run from another folder, or rename it")


check()
