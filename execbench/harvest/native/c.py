"""C: built with ``-g -O0``, its tests run under GDB with ``gdb_recorder``.

The build gets ``CFLAGS=-g -O0`` (and ``CXXFLAGS``) in its environment, which Make's
implicit rules, Autoconf's ``configure`` and most hand-written Makefiles read. A build that
sets its own flags does not: give them in ``--build`` then (``make CFLAGS='-g -O0'``,
which overrides a Makefile's assignment), or the recorder sees what optimisation left
(locals ``<optimized out>`` are shown as not recorded, lines out of order).

The tests run with ``MALLOC_PERTURB_`` set (``PERTURB``): the C library fills each block
``malloc`` gives with one byte, ``FILL``, so that what a program has not yet written to
its heap memory reads as that byte rather than as the previous block's leftovers (or
zeros, from fresh pages), and the recorder shows such a value as not recorded rather than
as a value to ask about (``gdb_recorder.encode``). Only a program that reads heap memory it
never wrote (undefined behaviour) sees a difference.

GDB starts with no init file, auto-loading off (a project's ``.gdbinit`` or
``*-gdb.py`` would run in the recorder), no separate debug files (libc's are not the
project's) and no debuginfod (no network).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from execbench.harvest.languages import Recorder
from execbench.harvest.options import HarvestError, HarvestOptions

RECORDER = Path(__file__).with_name("gdb_recorder.py")
PERTURB = 0x5A
FILL = PERTURB ^ 0xFF
"""The byte ``malloc``'d memory holds until the program writes it (0xA5: the C library
fills with the complement of ``MALLOC_PERTURB_``; freed memory gets ``PERTURB`` itself).
Not a printable character, and four of it in a row are never valid UTF-8, so a string a
program made is not taken for it (``gdb_recorder.FILL``, which a test checks is this)."""


class C:
    name = "c"
    suffixes = (".c", ".h")

    def tools(self) -> list[str]:
        found = []
        for tool in ("gdb", "sh"):
            path = shutil.which(tool)
            if path is None:
                raise HarvestError(f"a C harvest needs {tool} (Debian: apt-get install "
                                   f"{'gdb' if tool == 'gdb' else 'dash'})")
            found.append(path)
        return found

    def build_env(self, options: HarvestOptions) -> dict[str, str]:
        return {"CFLAGS": "-g -O0", "CXXFLAGS": "-g -O0"}

    def recorder(self, scratch: Path, test: str, config: Path) -> Recorder:
        script = scratch / "gdb_recorder.py"
        shutil.copyfile(RECORDER, script)
        gdb = shutil.which("gdb") or "gdb"
        argv = [gdb, "-nx", "-nh", "-batch", "-q",
                "-iex", "set auto-load off", "-iex", "set debuginfod enabled off",
                "-iex", "set history save off",
                "-x", str(script), "--args", "/bin/sh", test]
        return Recorder(argv=argv, read=[str(script)], ptrace=True,
                        env={"MALLOC_PERTURB_": str(PERTURB)})


LANGUAGE = C()
