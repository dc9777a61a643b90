"""``execbench harvest``: calls of a project's functions recorded while its own tests run.

``project`` runs one harvest (with ``options``, the functions ``listing`` finds and the
records ``records`` checks), ``deps`` installs a project's declared test dependencies,
``many`` harvests many projects and merges them, ``jail`` is where the tests run and
``child`` the recorder that runs them. ``index`` reads a package index and downloads a
release, ``releases`` picks the release of a package to harvest, ``ages`` dates functions
and tells which are new since a release, ``history`` dates them by a git checkout's
commits; ``native`` harvests C and Java projects under a debugger (``project.harvest``
hands them to it). This file imports none of them: the jail's launcher and the child are
started on their own module, the child in the project's interpreter with only the
stdlib-only modules it needs beside it, and neither should load the rest.
"""
