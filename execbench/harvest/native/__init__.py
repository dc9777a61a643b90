"""Harvests of compiled languages (C, Java): a project's own tests run under a debugger
inside the harvest jail, and what the debugger saw becomes recorded traces.

One driver serves every language; a language plugs in through one small object. The
modules:

``harvest.languages`` (beside this package, earlier in the import graph)
    The ``Language`` protocol and the ``LANGUAGES`` registry (``"c"``, ``"java"``,
    registered lazily), and ``NATIVE``, through which the harvest reaches ``driver``.
    What a language says, and nothing else:

    - ``name`` (the generic record's ``language``) and ``suffixes``: the source files
      whose text the driver snapshots before anything runs, so a record's ``code`` is the
      project's own text, never what its build or tests wrote later;
    - ``tools()``: the paths of the tools it needs (a debugger, a compiler, a JDK), or a
      ``HarvestError`` naming what is missing; the jail may read them;
    - ``build_env(options)``: what the build's environment adds (C: ``CFLAGS=-g -O0``);
    - ``recorder(scratch, test, config)``: a ``Recorder`` for the test command ``test``
      (a shell command): ``argv``, the program the jail ``exec``s in place of the test
      command (the debugger wrapping ``/bin/sh -c TEST``), ``read`` (more paths the jail
      may read: the recorder's own files, copied under ``scratch``), ``env`` (additions to
      the scrubbed environment), and the jail switches it needs (``ptrace`` to trace
      processes of the jail, ``loopback`` for a debugger's socket in the jail's own empty
      network namespace). ``config`` is the path of the JSON file the driver writes
      before the jail starts (its path is also in ``EXECBENCH_RECORDER_CONFIG``):
      ``records_fd`` (the channel, an inherited file descriptor), ``root`` (the scratch
      copy), ``files`` (the project's own source files, relative to ``root``: not tests,
      not their framework; ``driver.own``) and the bounds (``max_events``,
      ``max_value_nodes``, ``max_depth``, ``max_calls_seen``).

``recording``
    The only reader of what a recorder writes: JSON Lines on the channel, after the
    jail's own first line. Kinds, in the order they come:
    ``{"kind":"call","call":N,"function":ID,"file":REL,"name":NAME,"first":L1,"last":L2,
    "args":[[name,V,A],...]}``, ``{"kind":"line","call":N,"line":L,"locals":[[name,V,A],
    ...]}``, ``{"kind":"return","call":N,"value":V|null,"locals":[...]}`` (with
    ``"exception":TEXT`` when it unwinds) and last ``{"kind":"end","tests":[passed,total],
    "exit":CODE}``. V is a value in execbench's encoding (``values``), A a pointer's
    identity normalised per call (``"a1"``, ``"a2"``, ... by first appearance; equal
    tokens alias) or null. Every line is checked (size, kind, types, call numbers, lines
    inside the function); a bad line is refused and counted by reason, never trusted.

``facts``
    Recorded calls into traces: line events, states before and after each statement,
    loop iterations, branch outcomes, aliasing, ready-made in ``trace.extra["facts"]``
    as the published CodeSense C and Java files bring them, so every CodeSense task builds
    from the generic file with no language switch.

``shape``
    A C or Java function's statements, loops and conditional blocks read from its text,
    in the form the Python analysis gives (``tasks.codesense.kinds.Function``).

``driver``
    Copy the project to scratch, snapshot its sources, run ``--build`` in the jail, run
    ``--test`` under the language's recorder in the jail, read the channel, sample calls
    per function with the seed, write the generic JSONL with ``language`` set.

``c``
    GDB and its Python API (``gdb_recorder.py``, run inside GDB, standard library only).
``java``
    The JVM's debug interface through a small helper (``jdi/``) compiled at first use.
"""
