"""Kernel-enforced confinement of sandbox runners: the layers under the audit hook.

The audit hook (``worker``) is a Python mechanism, and Python code can get around it (call
``_posixsubprocess.fork_exec`` directly, rewrite the hook's closure cells found through
``gc``). So every runner, after its set-up and before it reads its first job, also asks the
kernel to hold it, in this order:

1. **Landlock** (Linux >= 5.13): writes, deletes, renames and links only under the
   sandbox's temporary root; reads only of the interpreter's installation, execbench
   itself, system libraries, the runner's own ``/proc`` entry and a few device files (so a
   program cannot read the user's ``.env``, keys in the home folder, or another process's
   environment); TCP bind/connect refused (ABI 4); signals and abstract Unix sockets
   scoped to the runner (ABI 6).
2. **An unprivileged user**, when execbench runs as root: the runner becomes ``nobody``, so
   file permissions hold (root-owned files cannot be written, root processes cannot be
   signalled or read through ``/proc``). It keeps one capability, ``CAP_DAC_READ_SEARCH``,
   so it can still import from an interpreter installed in a private home folder (pyenv
   under ``/root``); with Landlock active, reads are limited to the paths above anyway.
3. **seccomp-bpf** (through libseccomp, ``pyseccomp``), with ``no_new_privs``: process
   creation (``execve``, ``execveat``, ``fork``, ``vfork``, ``clone`` without
   ``CLONE_THREAD``; ``clone3`` answers ``ENOSYS`` so the C library falls back to
   ``clone``, whose flags the filter can see), sockets, ``ptrace`` and cross-process memory
   access, signals to any process but the runner itself, mount and namespace calls, keyrings,
   ``bpf``, ``perf_event_open``, ``io_uring`` (its operations bypass seccomp),
   ``userfaultfd``, kernel modules, ``kexec``, reboot, clock setting, changing user or
   capabilities, file handles (``open_by_handle_at``), typing into a terminal
   (``TIOCSTI``; the runner's standard streams are ``/dev/null`` anyway), changing file
   modes (``chmod``: a runner could lock another worker out of its folder), watching files
   (``inotify``/``fanotify``: names of files the runner may not read), and limits,
   priorities, CPU affinity or memory placement of any process but the runner itself.
   Refused calls fail with ``EPERM``; system calls of a foreign ABI (i386, x32) kill the
   runner.

Plus the **environment allow-list** the worker starts with (``scrubbed_environment``) and the
**empty network namespace** of the worker (``isolate_network``). A layer the machine lacks is
left out with one warning (``execbench doctor`` lists them); a layer that worked in the
zygote's probe but fails in a runner stops that worker, so no runner ever runs with fewer
layers than reported.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import struct
import sys
from dataclasses import dataclass, field
from typing import Any

ENV_ALLOWED = ("PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONIOENCODING", "PYTHONUTF8")
"""Variables a worker inherits (plus ``LC_*``); everything else (keys, tokens, credentials,
proxies) is dropped before the worker starts."""

_UNPRIVILEGED_USER = "nobody"
_CAP_DAC_READ_SEARCH = 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_PR_SET_KEEPCAPS = 8
_PR_SET_NO_NEW_PRIVS = 38

# Landlock (include/uapi/linux/landlock.h); the system call numbers are the same on every
# architecture.
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_WRITE_TREE = sum(1 << bit for bit in range(4, 13))  # remove, make dir/reg/sock/fifo/...
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

_READ = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_READABLE_SYSTEM_PATHS = ("/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache",
                          "/etc/localtime", "/sys/devices/system/cpu")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")

_DENIED_SYSCALLS = (
    "execve", "execveat", "fork", "vfork",
    "socket", "socketpair", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "tkill",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname",
    "setdomainname", "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "vhangup",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
    "setfsuid", "setfsgid", "capset",
    "chmod", "fchmod", "fchmodat", "fchmodat2",
    "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark",
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "semget", "semop", "semtimedop", "semctl", "ipc", "mq_open", "mq_unlink",
    "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr", "memfd_create",
    "memfd_secret",
)
_SELF_ONLY_SIGNALS = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
_PID_ZERO_ONLY = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam",
                  "sched_setattr", "migrate_pages", "move_pages")
"""Calls that name a process by its first argument: allowed on the caller (pid 0) only, so a
runner cannot lower another runner's limits or priority (all runners share one uid)."""
_PR_SET_PDEATHSIG = 1
_TERMINAL_INJECTION = (0x5412, 0x541C)  # TIOCSTI (type into a terminal), TIOCLINUX
_CLONE_THREAD = 0x00010000


class ConfinementError(RuntimeError):
    """A layer the probe found working could not be applied in a runner."""


def scrubbed_environment(environ: dict[str, str] | os._Environ) -> dict[str, str]:
    """The worker's environment: the allow-list only, so no secret reaches a program."""
    return {k: v for k, v in environ.items() if k in ENV_ALLOWED or k.startswith("LC_")}


_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWNET = 0x00020000, 0x08000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
_MNT_DETACH = 2


def _unshare(flags: int) -> bool:
    try:
        return _libc().unshare(flags) == 0
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
    libc = _libc()
    if libc.mount(None, b"/", None, ctypes.c_ulong(_MS_REC | _MS_PRIVATE), None) != 0:
        return False
    options = f"size={size_bytes},nr_inodes={files},mode=0700".encode()
    return libc.mount(b"tmpfs", os.fsencode(root), b"tmpfs",
                      ctypes.c_ulong(_MS_NOSUID | _MS_NODEV | _MS_NOEXEC), options) == 0


def release_root(root: str) -> None:
    """Unmount what ``bound_root`` mounted (its memory is freed), so the folder can go."""
    _libc().umount2(os.fsencode(root), _MNT_DETACH)


@functools.cache
def _libc() -> Any:
    """The C library, opened once (in the zygote, so every runner inherits it open)."""
    return ctypes.CDLL(None, use_errno=True)


def _fail(what: str) -> None:
    code = ctypes.get_errno()
    raise OSError(code, f"{what}: {os.strerror(code)}")


@dataclass
class Plan:
    """What every runner of one worker applies; made once in the zygote by ``probe``."""

    root: str
    landlock_abi: int = 0
    read_paths: tuple[str, ...] = ()
    user: tuple[int, int] | None = None
    seccomp: bool = False
    seccomp_program: bytes = b""
    """The compiled filter (``compile_seccomp``), with a mark where each runner's pid goes."""
    network: bool = False
    """Whether the zygote is in an empty network namespace (its runners are with it)."""
    ipc: bool = False
    """Whether the zygote is in an IPC namespace of its own."""
    temp_bytes: int = 0
    """The size of the tmpfs on the temporary root; 0 where none could be mounted."""
    temp_files: int = 0
    warnings: list[str] = field(default_factory=list)

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
                        "reads only of the interpreter, execbench and system libraries"
            if self.landlock_abi else "off",
            "user": f"on: runners run as uid {self.user[0]}" if self.user
            else "off: runners run as the invoking user",
            "network": "on: empty network namespace" if network_isolated
            else "off: no network namespace (sockets are still refused by seccomp)"
            if self.seccomp else "off",
            "environment": "on: only " + ", ".join(ENV_ALLOWED) + " and LC_* are passed",
            "audit hook": "on",
        }


def _landlock_abi() -> int:
    try:
        abi = _libc().syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                              ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(abi), 0)


def _read_paths() -> tuple[str, ...]:
    """Trees a runner may read: the interpreter's prefixes, execbench, system libraries."""
    import execbench

    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable)),
                  os.path.dirname(os.path.realpath(execbench.__file__)),
                  *_READABLE_SYSTEM_PATHS]
    seen: list[str] = []
    for path in candidates:
        real = os.path.realpath(path)
        if os.path.exists(real) and real not in seen:
            seen.append(real)
    return tuple(seen)


def _unprivileged_user() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    try:
        import pwd

        entry = pwd.getpwnam(_UNPRIVILEGED_USER)
        return entry.pw_uid, entry.pw_gid
    except (KeyError, ImportError):
        return 65534, 65534


def _seccomp_module() -> Any:
    """pyseccomp, or None where it or libseccomp is missing."""
    try:
        import pyseccomp
    except (ImportError, RuntimeError, OSError):
        return None
    return pyseccomp


def _apply_landlock(plan: Plan) -> None:
    abi = plan.landlock_abi
    rules = [(plan.root, landlock_write_rights(abi))]
    rules += [(path, _READ) for path in plan.read_paths]
    rules += [(f"/proc/{os.getpid()}", _FS_READ_FILE | _FS_READ_DIR)]
    rules += [(device, landlock_file_rights(abi)) for device in _DEVICES
              if os.path.exists(device)]
    restrict_paths(abi, rules)


LANDLOCK_READ = _READ
"""Rights to read (and execute) under a path."""


def landlock_write_rights(abi: int) -> int:
    """Rights to read, write, create and remove under a path, as far as ``abi`` knows them."""
    return _READ | _FS_WRITE_FILE | _FS_WRITE_TREE | (_FS_REFER if abi >= 2 else 0) | \
        (_FS_TRUNCATE if abi >= 3 else 0)


def landlock_file_rights(abi: int) -> int:
    """Rights on one file (a device): open it to read, write or execute."""
    return _FS_EXECUTE | _FS_READ_FILE | _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)


def restrict_paths(abi: int, rules: list[tuple[str, int]], restrict_tcp: bool = True) -> None:
    """Confine the calling process (and what it starts) with Landlock: file access only as
    ``rules`` (path, rights) grant it; TCP bind/connect refused when ``restrict_tcp`` (ABI
    4); signals and abstract Unix sockets scoped to the process's domain (ABI 6). Sets
    ``no_new_privs``, which Landlock needs without ``CAP_SYS_ADMIN``."""
    fs = landlock_write_rights(abi) | (_FS_IOCTL_DEV if abi >= 5 else 0)
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 and restrict_tcp else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    libc = _libc()
    buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, buffer, ctypes.c_size_t(len(attr)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        _fail("landlock_create_ruleset")
    file_rights = landlock_file_rights(abi)
    try:
        for path, rights in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                if not os.path.isdir(path):
                    rights &= file_rights
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
                if libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, _LANDLOCK_RULE_PATH_BENEATH,
                                rule, ctypes.c_uint32(0)) != 0:
                    _fail(f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            _fail("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


def _drop_user(uid: int, gid: int) -> None:
    """Become ``uid``, keeping only ``CAP_DAC_READ_SEARCH`` (see the module docstring)."""
    libc = _libc()
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    if libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
        _fail("prctl(PR_SET_KEEPCAPS)")
    os.setresuid(uid, uid, uid)
    header = struct.pack("=Ii", _LINUX_CAPABILITY_VERSION_3, 0)
    keep = 1 << _CAP_DAC_READ_SEARCH
    data = struct.pack("=6I", keep, keep, 0, 0, 0, 0)  # effective, permitted, inheritable x2
    if libc.capset(ctypes.create_string_buffer(header, 8),
                   ctypes.create_string_buffer(data, 24)) != 0:
        _fail("capset")
    if os.getuid() != uid or os.geteuid() != uid:
        raise ConfinementError("the runner is still privileged after setresuid")


_PID_MARK = 0x7A5E1D00
"""Stands for the runner's pid in the filter the zygote compiles once; each runner writes
its own pid over it before loading it (pids stay below 2**22, so the mark is never one)."""
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_BPF_JMP, _BPF_K = 0x05, 0x00
_INSTRUCTION = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k


def _filter(seccomp: Any, pid: int) -> Any:
    """The runners' seccomp rules, for a runner whose pid is ``pid``."""
    deny = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in _DENIED_SYSCALLS:
        _add(rules, deny, name)
    rules.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_THREAD, 0))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for name in _PID_ZERO_ONLY:
        _add(rules, deny, name, seccomp.Arg(0, seccomp.NE, 0))
    _add(rules, deny, "setpriority", seccomp.Arg(0, seccomp.NE, 0))  # PRIO_PROCESS only
    _add(rules, deny, "setpriority", seccomp.Arg(1, seccomp.NE, 0))  # of the caller only
    _add(rules, deny, "ioprio_set", seccomp.Arg(0, seccomp.NE, 1))  # IOPRIO_WHO_PROCESS only
    _add(rules, deny, "ioprio_set", seccomp.Arg(1, seccomp.NE, 0))  # of the caller only
    for request in _TERMINAL_INJECTION:
        rules.add_rule(deny, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    for name in _SELF_ONLY_SIGNALS:
        rules.add_rule(deny, name, seccomp.Arg(0, seccomp.NE, pid))
    return rules


def _export(rules: Any) -> bytes:
    fd = os.memfd_create("execbench-seccomp")
    try:
        with os.fdopen(os.dup(fd), "w+b") as handle:
            rules.export_bpf(handle)
        return os.pread(fd, 1 << 20, 0)
    finally:
        os.close(fd)


def _pid_slots(program: bytes) -> list[int]:
    """Offsets of the ``k`` fields that hold the pid mark in jumps."""
    size = _INSTRUCTION.size
    return [offset + 4 for offset in range(0, len(program), size)
            if _INSTRUCTION.unpack_from(program, offset)[3] == _PID_MARK
            and _INSTRUCTION.unpack_from(program, offset)[0] & 0x07 == _BPF_JMP]


def compile_seccomp() -> bytes:
    """The runners' filter as a BPF program, compiled once in the zygote (libseccomp takes
    milliseconds to build it, which a runner per unit cannot afford). Built a second time
    for another pid to check that the pid sits where ``_pid_slots`` finds it and nowhere
    else, so a runner's patched copy is exactly the filter libseccomp would build for it."""
    seccomp = _seccomp_module()
    if seccomp is None:
        raise ConfinementError("pyseccomp or libseccomp is not importable")
    program = _export(_filter(seccomp, _PID_MARK))
    other = _export(_filter(seccomp, _PID_MARK + 1))
    slots = _pid_slots(program)
    expected = bytearray(program)
    for offset in slots:
        struct.pack_into("=I", expected, offset, _PID_MARK + 1)
    if not slots or bytes(expected) != other or len(program) % _INSTRUCTION.size:
        raise ConfinementError("the seccomp filter's pid could not be located")
    return program


def _load_seccomp(program: bytes) -> None:
    """Load the zygote's filter with this runner's pid written in (``no_new_privs`` is
    set first, as the kernel requires of an unprivileged caller)."""
    if not program:
        raise ConfinementError("seccomp is planned but no filter was compiled")
    patched = bytearray(program)
    for offset in _pid_slots(program):
        struct.pack_into("=I", patched, offset, os.getpid())
    buffer = ctypes.create_string_buffer(bytes(patched), len(patched))
    fprog = struct.pack("=HxxxxxxQ", len(patched) // _INSTRUCTION.size,
                        ctypes.addressof(buffer))
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("prctl(PR_SET_NO_NEW_PRIVS)")
    holder = ctypes.create_string_buffer(fprog, len(fprog))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, holder, 0, 0) != 0:
        _fail("prctl(PR_SET_SECCOMP)")


def _add(rules: Any, action: int, name: str, *args: Any) -> None:
    """One filter rule; a call this architecture or libseccomp does not know (``fork`` on
    arm64, ``fchmodat2`` before libseccomp 2.6) is skipped: it cannot be made anyway."""
    try:
        rules.add_rule(action, name, *args)
    except OSError as exc:
        if exc.errno not in (errno.EFAULT, errno.EINVAL, errno.EDOM):
            raise


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
    prctl = _libc().prctl
    parent = os.getpid() if preexec else os.getppid()
    code = int(signum)

    def arm() -> None:
        if prctl(_PR_SET_PDEATHSIG, code, 0, 0, 0) != 0:
            _fail("prctl(PR_SET_PDEATHSIG)")
        if os.getppid() != parent:
            os._exit(1)

    if preexec:
        return arm
    arm()
    return None


def apply(plan: Plan) -> None:
    """Confine the calling runner as ``plan`` says; raises ``OSError``/``ConfinementError``
    if a planned layer fails (the caller must then exit, never serve unconfined)."""
    if plan.landlock_abi:
        _apply_landlock(plan)
    if plan.user is not None:
        _drop_user(*plan.user)
    die_with_parent()
    if plan.seccomp:
        _load_seccomp(plan.seccomp_program)


def probe(root: str) -> Plan:
    """Find which layers this machine offers, by applying each in a throw-away child.

    Run in the zygote before it forks runners. A layer that fails in the child is left out
    of the plan with a warning naming why.
    """
    plan = Plan(root=root, landlock_abi=_landlock_abi(), read_paths=_read_paths(),
                user=_unprivileged_user(), seccomp=_seccomp_module() is not None)
    if plan.seccomp:
        try:
            plan.seccomp_program = compile_seccomp()
        except (OSError, ConfinementError) as exc:
            plan.seccomp = False
            plan.warnings.append(f"seccomp could not be compiled ({exc}); left out")
    if not plan.landlock_abi:
        plan.warnings.append("Landlock is not available (Linux >= 5.13 with Landlock "
                             "enabled): programs may read any file the runner can read")
    if plan.user is None:
        plan.warnings.append("not running as root, so runners keep the invoking user's "
                             "permissions")
    if not plan.seccomp:
        plan.warnings.append("seccomp is off: install libseccomp (Debian: libseccomp2) "
                             "and the pyseccomp package")
    for layer in ("landlock", "user", "seccomp"):
        error = _try_in_child(plan, layer)
        if error is None:
            continue
        plan.warnings.append(f"{layer} could not be applied ({error}); left out")
        if layer == "landlock":
            plan.landlock_abi = 0
        elif layer == "user":
            plan.user = None
        else:
            plan.seccomp = False
    return plan


def _try_in_child(plan: Plan, layer: str) -> str | None:
    """Apply one planned layer in a forked child; the error text, or None if it worked."""
    if (layer == "landlock" and not plan.landlock_abi) or (layer == "user" and not plan.user) \
            or (layer == "seccomp" and not plan.seccomp):
        return None
    single = Plan(root=plan.root, read_paths=plan.read_paths,
                  landlock_abi=plan.landlock_abi if layer == "landlock" else 0,
                  user=plan.user if layer == "user" else None, seccomp=layer == "seccomp",
                  seccomp_program=plan.seccomp_program)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        message = b""
        try:
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
