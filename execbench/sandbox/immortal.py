"""The zygote's objects made immortal before it forks runners, where the interpreter has
immortal objects (CPython 3.12 and 3.13 with the GIL).

A runner is a fork of the zygote, so every page of the zygote's heap is shared with it
until one of them writes there; each such page then costs a copy-on-write fault (about
3 microseconds on a 2-core cloud machine) in every runner. Most of those writes are
reference counts: a runner that merely calls a function, reads a module global or looks up
a method writes the object's count. From Python 3.12 the interpreter leaves the count of an
immortal object untouched, and it makes its own singletons, small integers and interned
strings immortal. ``make_immortal`` gives every object the zygote holds once it is warm
(``runner.warm_up``) the count those singletons have, so runners read them without writing:
on 3.12 and 3.13 a CRUXEval unit then dirties about 500 pages instead of 750
(``bench/sandbox_throughput.py`` prints the split).

What this changes, and why it is safe: an immortal object is never freed, which the
zygote's module-level objects never are anyway (the objects of one start-up are kept, a
bounded set); its count reads as a constant (``sys.getrefcount``), the same in every runner
of every worker, so a program's ground truth and its re-runs agree as before; the
interpreter's in-place shortcuts that need a count of one (string concatenation) apply only
to objects a program makes, which are not immortal. Nothing a runner does can make an
object mortal again: the count is written here, in the zygote, by execbench's own code
before any program runs. On 3.11 (no immortal objects), on free-threaded builds (another
object layout) and from 3.14 (whose immortal count carries flags) this does nothing.
"""

from __future__ import annotations

import ctypes
import gc
import sys


def _immortal_count() -> int | None:
    """The reference count the interpreter gives its immortal objects (``None``'s), or None
    where it has none: 3.11, where ``None``'s count is an ordinary one, or a free-threaded
    build."""
    if not (3, 12) <= sys.version_info[:2] <= (3, 13) or "t" in getattr(sys, "abiflags", ""):
        return None  # 3.14 keeps flags beside an immortal's count: not to be copied
    count = ctypes.c_ssize_t.from_address(id(None)).value
    return count if count == ctypes.c_ssize_t.from_address(id(True)).value else None


def make_immortal() -> int:
    """Give every object the garbage collector tracks, and every object they refer to
    directly (strings, numbers, code, bytes), the immortal count; then freeze the collector
    on them. The number of objects changed (0 where nothing applies)."""
    count = _immortal_count()
    if count is None:
        return 0
    gc.collect()
    gc.unfreeze()  # frozen objects are not listed by ``get_objects``
    found: dict[int, object] = {}
    for holder in gc.get_objects():
        found[id(holder)] = holder
        for held in gc.get_referents(holder):
            found[id(held)] = held
    found.pop(id(found), None)
    changed = 0
    for address in found:
        field = ctypes.c_ssize_t.from_address(address)
        if 0 < field.value < count:
            field.value = count
            changed += 1
    found.clear()
    gc.freeze()
    return changed
