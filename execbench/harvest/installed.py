"""What an interpreter has installed, as one digest for a harvest's resume key.

A project's tests depend on what the interpreter running them has installed: a harvest
that failed for a missing module must run again once it is installed, and one made with
other versions of the project's dependencies may record other calls. So the key a
harvest is resumed by (``many.project_key``) holds this digest of the interpreter's
distributions, names and versions, as ``importlib.metadata`` lists them.

The interpreter is the user's own (``--python``), asked as ``project`` asks it where it
is installed: outside the jail, with the scrubbed environment the tests get and without
the user's site folder (the tests' ``HOME`` is a scratch folder, so they never see it).
With ``--install-deps`` it is the base the environment is made from: the environment's
own packages follow from the project's requirements, which the key holds already.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from execbench.sandbox import confine

_LIST = ("import hashlib, importlib.metadata as m, sys\n"
         "found = sorted({f\"{(d.metadata['Name'] or '').lower()}=={d.version}\" "
         "for d in m.distributions()})\n"
         "print(hashlib.sha256('\\n'.join([sys.version, *found]).encode()).hexdigest())")
_SECONDS = 60
NOT_ASKED = "not asked: "


def distributions_digest(python: str) -> str:
    """A digest of ``python``'s version and installed distributions; when it cannot be
    asked, a line starting ``NOT_ASKED`` (``many`` then harvests again whatever the key).
    ``python`` is found as the harvest finds it (a name on ``PATH``, or a path relative to
    the working folder), not from the neutral folder it is asked in."""
    env = confine.scrubbed_environment(os.environ)
    python = os.path.abspath(shutil.which(python) or python)
    try:
        with tempfile.TemporaryDirectory(prefix="execbench-asked-") as neutral:
            said = subprocess.run([python, "-s", "-c", _LIST], env=env, cwd=neutral,
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=_SECONDS, check=True)
        lines = said.stdout.decode(errors="replace").split()
        return lines[-1] if lines else "no answer"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{NOT_ASKED}{type(exc).__name__}"
