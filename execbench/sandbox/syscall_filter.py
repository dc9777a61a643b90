"""The sandbox's seccomp filters: system calls refused with ``EPERM`` (the list and why is
in ``confine``'s docstring), compiled once per pool and loaded in two parts.

The **worker's** part (most of the list) is loaded once by each zygote on itself, once it
has dropped to the unprivileged user (``confine.enclose``), and every runner it forks
inherits it. The **runner's** part is what the zygote itself must still do: create
processes (its runners), signal them and watch them through pidfds, and give each runner
its death signal. Each runner loads that short part on top, so a runner holds the whole
list, the zygote all of it but those calls. Loading the long list once per worker instead
of once per runner saves each unit the kernel's work on a 160-instruction program.

libseccomp takes milliseconds to build a filter, so the sandbox's parent compiles both to
BPF once (``confine.seccomp_program``). The runner's part holds a mark where the runner's
own pid goes (signals only to itself); the parent checks, by compiling it for a second
pid, that the pid is all that differs, and each runner writes its pid over the mark and
loads the program with one ``prctl``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from dataclasses import dataclass
from typing import Any

from execbench.sandbox.libc import PR_SET_NO_NEW_PRIVS, ConfinementError, fail, libc

_DENIED_SYSCALLS = (
    "execve", "execveat", "fork", "vfork",
    "socket", "socketpair", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_getfd", "pidfd_send_signal", "tkill",
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
    # An access control list changes a file's mode bits as chmod does: a runner could make
    # a folder of its files one its zygote, the same user, cannot empty.
    "setxattr", "lsetxattr", "fsetxattr", "setxattrat",
    "removexattr", "lremovexattr", "fremovexattr", "removexattrat",
    "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark",
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "semget", "semop", "semtimedop", "semctl", "ipc", "mq_open", "mq_unlink",
    "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr", "memfd_create",
    "memfd_secret",
)
"""Refused to the zygote and so to its runners (the worker's part)."""
_RUNNER_ONLY = ("pidfd_open",)
"""Refused to runners only: the zygote watches its runners through pidfds."""
_SELF_ONLY_SIGNALS = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
_PID_ZERO_ONLY = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam",
                  "sched_setattr", "migrate_pages", "move_pages")
"""Calls that name a process by its first argument: allowed on the caller (pid 0) only, so a
runner cannot lower another runner's limits or priority (all runners share one uid)."""
_PR_SET_PDEATHSIG = 1
_TERMINAL_INJECTION = (0x5412, 0x541C)  # TIOCSTI (type into a terminal), TIOCLINUX
_SIGNAL_OWNER_IOCTLS = (0x8901, 0x8902)  # FIOSETOWN, SIOCSPGRP
_SIGNAL_OWNER_FCNTLS = (8, 15)  # F_SETOWN, F_SETOWN_EX
"""What names the process a file's ``SIGIO`` (or the signal ``F_SETSIG`` picks, ``SIGKILL``
among them) goes to: the kernel checks only that the owner shares the setter's user, and
a runner shares its zygote's; Landlock scopes these signals only from ABI 6."""
_CLONE_THREAD = 0x00010000


def module() -> Any:
    """pyseccomp, or None where it or libseccomp is missing."""
    try:
        import pyseccomp
    except (ImportError, RuntimeError, OSError):
        return None
    return pyseccomp


_PID_MARK = 0x7A5E1D00
"""Stands for the runner's pid in the runner's part, compiled once; each runner writes
its own pid over it before loading it (pids stay below 2**22, so the mark is never one)."""
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_BPF_JMP, _BPF_K = 0x05, 0x00
_INSTRUCTION = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k


def _worker_filter(seccomp: Any) -> Any:
    """The worker's part: what the zygote refuses itself, for its runners to inherit."""
    deny = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in _DENIED_SYSCALLS:
        add_rule(rules, deny, name)
    for name in _PID_ZERO_ONLY:
        add_rule(rules, deny, name, seccomp.Arg(0, seccomp.NE, 0))
    add_rule(rules, deny, "setpriority", seccomp.Arg(0, seccomp.NE, 0))  # PRIO_PROCESS only
    add_rule(rules, deny, "setpriority", seccomp.Arg(1, seccomp.NE, 0))  # of the caller only
    add_rule(rules, deny, "ioprio_set", seccomp.Arg(0, seccomp.NE, 1))  # IOPRIO_WHO_PROCESS only
    add_rule(rules, deny, "ioprio_set", seccomp.Arg(1, seccomp.NE, 0))  # of the caller only
    for request in (*_TERMINAL_INJECTION, *_SIGNAL_OWNER_IOCTLS):
        rules.add_rule(deny, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    for command in _SIGNAL_OWNER_FCNTLS:
        rules.add_rule(deny, "fcntl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, command))
    return rules


def _runner_filter(seccomp: Any, pid: int) -> Any:
    """The runner's part, for a runner whose pid is ``pid``: the calls the zygote needs
    and a runner must not make."""
    deny = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in _RUNNER_ONLY:
        add_rule(rules, deny, name)
    rules.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_THREAD, 0))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    # The death signal the runner was given (SIGKILL with its zygote): never cleared, or a
    # runner could outlive a zygote that was killed before it could reap it.
    add_rule(rules, deny, "prctl", seccomp.Arg(0, seccomp.EQ, _PR_SET_PDEATHSIG))
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


def _pid_slots(program: bytes) -> tuple[int, ...]:
    """Offsets of the ``k`` fields that hold the pid mark in jumps."""
    size = _INSTRUCTION.size
    return tuple(offset + 4 for offset in range(0, len(program), size)
                 if _INSTRUCTION.unpack_from(program, offset)[3] == _PID_MARK
                 and _INSTRUCTION.unpack_from(program, offset)[0] & 0x07 == _BPF_JMP)


@dataclass(frozen=True)
class Programs:
    """Both parts of the filter as BPF programs (``compile_filters``)."""

    worker: bytes
    runner: bytes
    """With the pid mark, which each runner overwrites (``load``)."""


def compile_filters() -> Programs:
    """Both parts as BPF programs, compiled once by the sandbox's parent (libseccomp takes
    milliseconds per filter). The runner's part is built a second time for another pid to
    check that the pid sits where ``_pid_slots`` finds it and nowhere else, so a runner's
    patched copy is exactly the filter libseccomp would build for it."""
    seccomp = module()
    if seccomp is None:
        raise ConfinementError("pyseccomp or libseccomp is not importable")
    program = _export(_runner_filter(seccomp, _PID_MARK))
    other = _export(_runner_filter(seccomp, _PID_MARK + 1))
    slots = _pid_slots(program)
    expected = bytearray(program)
    for offset in slots:
        struct.pack_into("=I", expected, offset, _PID_MARK + 1)
    if not slots or bytes(expected) != other or len(program) % _INSTRUCTION.size:
        raise ConfinementError("the seccomp filter's pid could not be located")
    return Programs(worker=_export(_worker_filter(seccomp)), runner=program)


class Loadable:
    """A compiled part held ready to load: the program in a buffer of its own, the
    ``sock_fprog`` that points at it, and where the pid goes. Made once in the zygote, so
    a runner only writes its pid in and makes one ``prctl`` (``load``), with no packing or
    allocation of its own: in a fresh fork each of those costs copy-on-write faults."""

    def __init__(self, program: bytes) -> None:
        if not program or len(program) % _INSTRUCTION.size:
            raise ConfinementError("seccomp is planned but no filter was compiled")
        self.buffer = ctypes.create_string_buffer(program, len(program))
        self.fields = memoryview(self.buffer).cast("B").cast("I")
        self.slots = tuple(offset // 4 for offset in _pid_slots(program))
        fprog = struct.pack("=HxxxxxxQ", len(program) // _INSTRUCTION.size,
                            ctypes.addressof(self.buffer))
        self.fprog = ctypes.create_string_buffer(fprog, len(fprog))


def load(part: Loadable) -> None:
    """Load ``part`` on the calling process, with its pid written over the mark where the
    part has one (``no_new_privs`` is set first, as the kernel requires of an unprivileged
    caller)."""
    pid = os.getpid()
    for slot in part.slots:
        part.fields[slot] = pid
    if libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail("prctl(PR_SET_NO_NEW_PRIVS)")
    if libc().prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, part.fprog, 0, 0) != 0:
        fail("prctl(PR_SET_SECCOMP)")


def add_rule(rules: Any, action: int, name: str, *args: Any) -> None:
    """One filter rule; a call this architecture or libseccomp does not know (``fork`` on
    arm64, ``fchmodat2`` before libseccomp 2.6) is skipped: it cannot be made anyway."""
    try:
        rules.add_rule(action, name, *args)
    except OSError as exc:
        if exc.errno not in (errno.EFAULT, errno.EINVAL, errno.EDOM):
            raise


