"""The jail ``execbench harvest`` runs a project's tests in: the sandbox's kernel layers,
adapted to a test suite, which must fork, exec its own helpers and write temp files.

A project's tests are untrusted code running as the harvesting user (root in CI). The
parent (``project``) starts this module with execbench's own interpreter (it needs
``pyseccomp``); it sets the layers up in three processes and then ``exec``s the user's
interpreter on ``child``, whose tests inherit every layer:

- **the launcher** (in the parent's namespaces) enters new PID, mount, IPC and network
  namespaces (as root; elsewhere inside an unprivileged user namespace where the kernel
  allows one) and waits for the init below. Its environment holds nothing secret.
- **init**, pid 1 of the new PID namespace, dies with the launcher (``PDEATHSIG``), mounts
  a fresh ``/proc`` (only the jail's processes are in it: not the parent's ``environ``,
  ``mem`` or ``cwd``), size-bounded tmpfs on the private temp folder and ``/dev/shm``, an
  empty one on ``/run`` (the host's Unix sockets), and makes the interpreter reachable
  for an unprivileged user without any capability (a tmpfs over a private home folder
  such as ``/root``, with only the interpreter's trees bound back in). It reaps
  orphans, and when the test run's process ends it exits, and the kernel kills every
  process left in the namespace: a double-forked ``setsid`` daemon
  cannot outlive the harvest. System V IPC objects die with the IPC namespace.
- **the runner** sets ``RLIMIT_FSIZE``, Landlock (writes only under the scratch copy, the
  home and temp folders and ``/dev/shm``; reads only of those, the interpreter's trees,
  the copied child modules and system libraries), becomes ``nobody`` with no capability
  left, loads a seccomp filter (``setns``, ``unshare`` and namespace ``clone`` flags,
  ``ptrace``, ``process_vm_*``, mounts, keyrings, ``bpf``, System V IPC, POSIX message
  queues, ``io_uring``, modules and the like refused; fork, exec and sockets stay, the
  network namespace being empty), writes the layers as the first record of the parent's
  pipe, and ``exec``s the child.

A native harvest (``native``) sets ``ptrace``: its recorder is a debugger, which must
trace the test processes, so seccomp lets ``ptrace`` through (nothing else), and only in
a new PID namespace: there it reaches the jail's own processes alone, the namespace
showing no other. A jail without one keeps ``ptrace`` refused (the recorder then fails
to start its tests, and the harvest says so). The Java recorder sets ``loopback``: JDWP
talks TCP, so the launcher brings up ``lo`` of the jail's own empty network namespace,
which reaches nothing outside the jail (without that namespace it does nothing).

``deps`` runs pip in the same jail with two settings of its config: ``network``
keeps the host's network (pip needs the package index; no network namespace, and TCP is
not refused by Landlock), and ``unprivileged`` makes a jail started as root refuse to run
its program at all where it cannot become ``nobody``.

A layer the machine lacks is left out with one warning, listed with the others in the
layers record (``execbench doctor`` shows them through ``layers``). The layers do not make
the recorded values trustworthy: the recorder runs in the tests' own process, so a hostile
project can still forge what it records about itself.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from execbench.sandbox import confine, landlock, syscall_filter

_CLONE_NEWNS, _CLONE_NEWCGROUP, _CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
_CLONE_NEWIPC, _CLONE_NEWUSER, _CLONE_NEWPID = 0x08000000, 0x10000000, 0x20000000
_CLONE_NEWNET, _CLONE_NEWTIME = 0x40000000, 0x00000080
_NAMESPACES = _CLONE_NEWPID | _CLONE_NEWNS | _CLONE_NEWIPC | _CLONE_NEWNET
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_BIND = 0x2, 0x4, 0x8, 0x1000
_MS_REC, _MS_PRIVATE = 0x4000, 0x40000
_MNT_DETACH = 2
_PR_SET_PDEATHSIG = 1
_F_SETPIPE_SZ = 1031
MAX_FILE_BYTES = MAX_TEMP_BYTES = 1 << 30
"""The default bounds: a file the tests write; the temp folder and ``/dev/shm``, each."""
PIPE_BYTES = 1 << 20
"""The records pipe's buffer: a whole record usually fits, so the child rarely waits."""

_DENIED_SYSCALLS = (
    "setns", "unshare", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_getfd", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "semget", "semop", "semtimedop", "semctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname",
    "setdomainname", "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "vhangup",
    "fanotify_init", "fanotify_mark",
)
"""What a test suite does not need and an escape does: other namespaces, other processes'
memory, the kernel's shared objects (keyrings, IPC, BPF maps)."""
_NEW_NAMESPACE_FLAGS = (_CLONE_NEWNS, _CLONE_NEWCGROUP, _CLONE_NEWUTS, _CLONE_NEWIPC,
                        _CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET, _CLONE_NEWTIME)
_TERMINAL_INJECTION = (0x5412, 0x541C)  # TIOCSTI, TIOCLINUX
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime")
_RUNTIME_FOLDERS = ("/run", "/var/run")
"""Covered by an empty tmpfs in the jail: the host's services listen on Unix sockets there,
which neither the network namespace nor Landlock keeps a connection from."""


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str | None, target: str, kind: str | None, flags: int,
           data: str | None = None) -> None:
    _check(_libc().mount(source and source.encode(), target.encode(), kind and kind.encode(),
                         ctypes.c_ulong(flags), data and data.encode()), f"mount {target}")


# --------------------------------------------------------------------------- launcher


def _enter_namespaces(layers: dict[str, str], warnings: list[str], network: bool
                      ) -> tuple[bool, bool]:
    """New PID, mount, IPC and (unless ``network``) network namespaces: as root, else in a
    user namespace that maps the invoking user to itself. Whether they were made, and
    whether in a user namespace (where there is no other user to become)."""
    libc = _libc()
    flags = _NAMESPACES & ~_CLONE_NEWNET if network else _NAMESPACES
    which = "PID, mount and IPC" if network else "PID, mount, IPC and network"
    if os.geteuid() == 0 and libc.unshare(flags) == 0:
        layers["namespaces"] = f"on: {which} namespaces"
        return True, False
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(_CLONE_NEWUSER | flags) == 0:
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                               ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as handle:
                    handle.write(text)
        except OSError as exc:
            layers["namespaces"] = f"off: {exc}"
        else:
            layers["namespaces"] = f"on: {which} namespaces (in a user namespace)"
            return True, True
    else:
        layers["namespaces"] = f"off: {os.strerror(ctypes.get_errno())}"
    warnings.append("no new namespaces on this machine (run as root, or allow unprivileged "
                    "user namespaces): processes the tests start may outlive the harvest, "
                    "the tests see every process and can reach the network")
    return False, False


def _launch(config: dict[str, Any]) -> int:
    """The launcher: namespaces, then init, whose exit status it returns. SIGTERM (the
    parent's stop) is for the test run's process, which gets it through the process group;
    the launcher and init wait for it to end."""
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    layers: dict[str, str] = {}
    warnings: list[str] = []
    network = bool(config.get("network"))
    namespaced, in_user_namespace = _enter_namespaces(layers, warnings, network)
    layers["network"] = "off: the host's network, as asked" if network else \
        "on: empty network namespace" if namespaced else "off"
    if config.get("loopback") and namespaced and not network:
        _loopback_up()
        layers["network"] += ", its own loopback up (a debugger's socket)"
    pid = os.fork()
    if pid == 0:
        os._exit(_init(config, layers, warnings, namespaced, in_user_namespace))
    os.close(config["records_fd"])
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) & 0xFF


def _loopback_up() -> None:
    """Bring up ``lo`` of the jail's own network namespace: a debugger and the JVMs it
    follows talk over a TCP socket on 127.0.0.1 (JDWP has no other transport on Linux).
    The namespace holds no other interface, so nothing outside the jail is reachable."""
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


# --------------------------------------------------------------------------- init


def _init(config: dict[str, Any], layers: dict[str, str], warnings: list[str],
          namespaced: bool, in_user_namespace: bool) -> int:
    _check(_libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
    user = None if in_user_namespace else _unprivileged_user()
    if user is not None:
        os.chmod(config["scratch"], 0o711)  # enter, not list
    proc = False
    if namespaced:
        try:
            proc = _mount_private(config, user, layers)
        except OSError as exc:
            layers["temp folder"] = f"off: {exc}"
            warnings.append(f"the jail's mounts failed ({exc}): the parent's /proc entries "
                            "stay visible and the temp folder is not bounded")
    if "temp folder" not in layers:
        layers["temp folder"] = "off: no mount namespace"
    layers["proc"] = "on: a /proc of the jail's processes only" if proc else \
        "off: the host's /proc"
    if user is not None:
        if not all(_reachable(path) for path in _needed_paths(config)):
            user = None
            warnings.append("the interpreter is in a folder other users cannot enter and "
                            "no mount namespace can show it: the tests keep the invoking "
                            "user's permissions")
        else:
            for folder in (config["project"], config["home"], config["tmp"]):
                _give(folder, *user)
    if user is None and config.get("unprivileged") and os.geteuid() == 0:
        os.write(2, b"harvest jail: there is no way to run as an unprivileged user here, "
                    b"and this program may not run as root\n")
        return 125
    pid = os.fork()
    if pid == 0:
        try:
            _runner(config, layers, warnings, user, proc, namespaced)
        except BaseException as exc:  # noqa: BLE001 - never run the tests half-confined
            os.write(2, f"harvest jail: {type(exc).__name__}: {exc}\n".encode())
        os._exit(125)
    os.close(config["records_fd"])
    while True:  # reap orphans until the test run's process ends
        try:
            ended, status = os.wait()
        except ChildProcessError:
            return 125
        if ended == pid:
            return os.waitstatus_to_exitcode(status) & 0xFF


def _mount_private(config: dict[str, Any], user: tuple[int, int] | None,
                   layers: dict[str, str]) -> bool:
    """Mounts seen only in the jail: /proc, bounded tmpfs, the interpreter made reachable.
    Whether a fresh /proc was mounted (it needs a new PID namespace)."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    if user is not None:
        _show_to_others(_needed_paths(config), config["scratch"])
    for folder in sorted({os.path.realpath(f) for f in _RUNTIME_FOLDERS if os.path.isdir(f)}):
        if not any(Path(path).is_relative_to(folder) for path in _needed_paths(config)):
            _mount("tmpfs", folder, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC,
                   "size=1m,mode=0755")
    owner = f",uid={user[0]},gid={user[1]}" if user else ""
    size = config["max_temp_bytes"]
    _mount("tmpfs", config["tmp"], "tmpfs", _MS_NOSUID | _MS_NODEV,
           f"size={size},nr_inodes=65536,mode=0700{owner}")
    _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV,
           f"size={size},nr_inodes=16384,mode=1777")
    layers["temp folder"] = (f"on: TMPDIR and /dev/shm are private tmpfs of "
                             f"{size >> 20} MiB each")
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    return True


def _needed_paths(config: dict[str, Any]) -> list[str]:
    return [*config["read"], config["scratch"]]


def _reachable(path: str) -> bool:
    """Whether a user that is neither owner nor group can reach ``path`` (enter its parents,
    and the path itself when it is a folder)."""
    current = Path(path)
    folders = [*([current] if current.is_dir() else []), *current.parents]
    try:
        return all(os.stat(folder).st_mode & stat.S_IXOTH for folder in folders)
    except OSError:
        return False


def _hidden_parent(path: str) -> str | None:
    """The top folder on the way to ``path`` that other users cannot enter, if any."""
    for folder in reversed(Path(path).parents):
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return str(folder)
    return None


def _show_to_others(paths: list[str], scratch: str) -> None:
    """Make each path reachable by another user without a capability: a folder other users
    cannot enter (``/root``, mode 700) is covered by an empty tmpfs in which only the needed
    trees are bound back. Everything else in that folder is hidden from the jail."""
    hidden: dict[str, list[str]] = {}
    for path in sorted(set(paths)):
        parent = _hidden_parent(path)
        if parent is not None and not any(path.startswith(p + "/")
                                          for p in hidden.get(parent, [])):
            hidden.setdefault(parent, []).append(path)
    if not hidden:
        return
    stage = tempfile.mkdtemp(prefix="stage-", dir=scratch)
    staged = []
    for parent, inside in hidden.items():
        for path in inside:
            holder = os.path.join(stage, str(len(staged)))
            os.mkdir(holder)
            _mount(path, holder, None, _MS_BIND | _MS_REC)
            staged.append((holder, path))
        _mount("tmpfs", parent, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0755")
    for holder, path in staged:
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(holder, path, None, _MS_BIND | _MS_REC)
        _check(_libc().umount2(holder.encode(), _MNT_DETACH), f"umount {holder}")


def _give(folder: str, uid: int, gid: int) -> None:
    """Hand a folder the tests write in to their user (the parent made it as root)."""
    for parent, dirs, files in os.walk(folder):
        for name in (parent, *(os.path.join(parent, n) for n in dirs + files)):
            os.lchown(name, uid, gid)


def _unprivileged_user() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    return confine.unprivileged_user()


# --------------------------------------------------------------------------- runner


def _runner(config: dict[str, Any], layers: dict[str, str], warnings: list[str],
            user: tuple[int, int] | None, proc: bool, namespaced: bool) -> None:
    """Apply the per-process layers, report them as the first record, exec the child."""
    size = config["max_file_bytes"]
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    layers["file size"] = f"on: files of at most {size >> 20} MiB"
    os.chdir(config["project"])
    abi = landlock.abi()
    if abi:
        landlock.restrict_paths(abi, _landlock_rules(config, abi, proc),
                               restrict_tcp=not (namespaced or config.get("network")))
        layers["landlock"] = (f"on (ABI {abi}): writes only under the scratch copy and the "
                              "temp folders; reads only of those, the interpreter and system "
                              "libraries")
    else:
        layers["landlock"] = "off: this kernel offers no Landlock"
        warnings.append("Landlock is not available (Linux >= 5.13 with Landlock enabled): "
                        "the tests may read and write any file their user can")
    if user is not None:
        _drop_user(*user)
        layers["user"] = f"on: the tests run as uid {user[0]} without capabilities"
    else:
        layers["user"] = "off: the tests run as the invoking user"
        if os.geteuid() != 0 or "in a user namespace" in layers["namespaces"]:
            warnings.append("not running as root, so the tests keep the invoking user's "
                            "permissions")
    _check(_libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
    ptrace = bool(config.get("ptrace")) and namespaced
    if _apply_seccomp(ptrace):
        layers["seccomp"] = ("on: namespaces, ptrace, other processes' memory, mounts, "
                             "keyrings, bpf and System V/POSIX IPC refused")
        if ptrace:
            layers["seccomp"] = layers["seccomp"].replace("ptrace, ", "") + \
                "; ptrace allowed, for a debugger tracing the jail's own processes"
    else:
        layers["seccomp"] = "off: pyseccomp or libseccomp is missing"
        warnings.append("seccomp is off: install libseccomp (Debian: libseccomp2) and the "
                        "pyseccomp package for execbench's interpreter")
    layers["environment"] = "on: only " + ", ".join(confine.ENV_ALLOWED) + " and LC_* are passed"
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    fd = config["records_fd"]
    _write(fd, json.dumps({"kind": "jail", "layers": layers, "warnings": warnings}) + "\n")
    if config["argv"] is None:  # a probe: the layers are all it was asked for
        os._exit(0)
    os.set_inheritable(fd, True)
    os.execve(config["argv"][0], config["argv"], config["env"])


def _landlock_rules(config: dict[str, Any], abi: int, proc: bool) -> list[tuple[str, int]]:
    write = landlock.write_rights(abi)
    rules = [(config[name], write) for name in ("project", "home", "tmp")]
    if proc:
        rules.append(("/dev/shm", write))
        rules.append(("/proc", landlock.READ))  # the jail's own processes only
    read = [*config["read"], *landlock.READABLE_SYSTEM_PATHS, *_SYSTEM_FILES]
    rules += [(path, landlock.READ) for path in read if os.path.exists(path)]
    rules += [(device, landlock.file_rights(abi)) for device in landlock.DEVICES
              if os.path.exists(device)]
    return rules


def _drop_user(uid: int, gid: int) -> None:
    """Become ``uid``: without ``PR_SET_KEEPCAPS`` the kernel clears every capability."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise confine.ConfinementError("still privileged after setresuid")


def _apply_seccomp(ptrace: bool = False) -> bool:
    """Load the filter (it survives ``exec``); False where libseccomp is missing. With
    ``ptrace`` (the config's switch for a native harvest, whose recorder is a debugger)
    ``ptrace`` itself is allowed; the runner asks for it only inside a new PID namespace,
    where the jail's processes are the only ones the debugger can name."""
    seccomp = syscall_filter.module()
    if seccomp is None:
        return False
    deny = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in _DENIED_SYSCALLS:
        if not (ptrace and name == "ptrace"):
            syscall_filter.add_rule(rules, deny, name)
    for flag in _NEW_NAMESPACE_FLAGS:
        rules.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")  # the C library falls back to clone
    for request in _TERMINAL_INJECTION:
        rules.add_rule(deny, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    rules.load()
    return True


def _write(fd: int, text: str) -> None:
    data = text.encode()
    while data:
        data = data[os.write(fd, data):]


# --------------------------------------------------------------------------- parent side


def start(config: dict[str, Any], child: dict[str, Any] | None, scratch: Path, log: Any
          ) -> tuple[subprocess.Popen, int]:
    """Start the launcher on ``config`` (see ``project``), the child's own
    ``child`` config written beside it with the pipe it writes on; the process and the read
    end of that pipe, which only the parent holds."""
    read, write = os.pipe()
    try:
        import fcntl

        fcntl.fcntl(write, _F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass  # a smaller buffer only makes the child wait more often
    if child is not None:
        (scratch / "config.json").write_text(json.dumps({**child, "records_fd": write}))
    path = scratch / "jail.json"
    path.write_text(json.dumps({**config, "records_fd": write}))
    path.chmod(0o600)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (f"import sys; sys.path.insert(0, {package_root!r}); "
            f"from {__name__} import main; main()")
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", code, str(path)], env={"PATH": os.defpath},
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            pass_fds=(write,), start_new_session=True)
    finally:
        os.close(write)
    os.set_blocking(read, False)
    return process, read


def layers(max_file_bytes: int = MAX_FILE_BYTES, max_temp_bytes: int = MAX_TEMP_BYTES
           ) -> dict[str, str]:
    """Which layers a harvest gets on this machine, a line each (an ``off`` line says
    why): the jail is started up to the point of exec."""
    with tempfile.TemporaryDirectory(prefix="execbench-harvest-probe-") as scratch:
        root = Path(scratch)
        for name in ("project", "home", "tmp"):
            (root / name).mkdir()
        config = {"scratch": scratch, "project": str(root / "project"),
                  "home": str(root / "home"), "tmp": str(root / "tmp"),
                  "read": [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)],
                  "argv": None, "env": {}, "max_file_bytes": max_file_bytes,
                  "max_temp_bytes": max_temp_bytes}
        with open(os.devnull, "wb") as log:
            process, read = start(config, None, root, log)
            process.wait()
        os.set_blocking(read, True)
        with os.fdopen(read, "rb") as pipe:
            first = pipe.readline()
    if not first:
        return {"jail": "off: the jail could not start"}
    report = json.loads(first)
    return report["layers"]


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    syscall_filter.module()  # imported now: the runner cannot read its files later
    sys.exit(_launch(config))
