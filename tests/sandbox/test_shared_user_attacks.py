"""Attacks on the zygote confining itself (the zygote and its runners share the
unprivileged user; the runner loads only its short part of the seccomp filter on top of
the worker's, which it inherits; its short Landlock layer is begun by the zygote).

Each hostile unit runs with its audit hook defused (``UNHOOK``), and each test checks what
happened outside it: the worker alive, no restart, later units' results right. None
depends on speed.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from execbench.sandbox import syscall_filter
from execbench.sandbox.pool import Job, Sandbox, worker_environment
from execbench.sandbox.runner import ANSWERS_FD
from tests.sandbox.test_confinement import (
    PLAN,
    UNHOOK,
    _outcome,
    _run,
    needs_landlock,
    needs_seccomp,
)

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the user drop applies as root")
x86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 system calls")


SILENCE = UNHOOK + '''
def silence():
    """``unhook``, and the hook's code replaced by one that allows every event (``ctypes``
    among them, which its code refuses by name)."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "function" and obj.__name__ == "hook" and obj.__closure__:
            names = obj.__code__.co_freevars
            text = ("def outer():\\n" + "".join(f"    {n} = None\\n" for n in names)
                    + "    def hook(event, args):\\n"
                    + "".join(f"        {n}\\n" for n in names) + "        return None\\n"
                    + "    return hook\\n")
            space = {}
            exec(text, space)
            obj.__code__ = space["outer"]().__code__
            return True
    return False

'''


def _run_silenced(box: Sandbox, body: str) -> object:
    """``f()`` run with the audit hook silenced for every event; its outcome."""
    code = SILENCE + "def f(*args):\n    assert silence()\n" + \
        "".join(f"    {line}\n" for line in body.splitlines())
    return box.run(Job(code, "f", ""))


def _later_units_are_right(box: Sandbox) -> None:
    """The units after an attack get their own results, from the same worker."""
    traces = box.map(Job(f"def g():\n    return {i} * 3\n", "g", "") for i in range(6))
    assert [_outcome(trace) for trace in traces] == [i * 3 for i in range(6)]
    assert box.restarts == 0


# -- the runner's confinement, seen from inside -------------------------------------------


@needs_seccomp
def test_a_runner_holds_both_filter_parts_and_no_more_privilege(sandbox: Sandbox) -> None:
    body = ("status = dict(line.split(':\\t', 1) for line in "
            "open('/proc/self/status').read().splitlines() if ':\\t' in line)\n"
            "return [status[k].strip() for k in "
            "('Seccomp', 'Seccomp_filters', 'NoNewPrivs', 'CapEff', 'CapPrm', 'Uid')]")
    seccomp, filters, no_new_privs, effective, permitted, uids = _outcome(_run(sandbox, body))
    assert (seccomp, filters, no_new_privs) == ("2", "2", "1")
    if PLAN.user is not None:
        assert int(effective, 16) == int(permitted, 16) == 1 << 2  # CAP_DAC_READ_SEARCH
        assert set(uids.split()) == {str(PLAN.user[0])}


def test_a_runner_inherits_no_descriptor_of_its_zygote(sandbox: Sandbox) -> None:
    """No Landlock ruleset (the zygote's long layer, or the runner's own short one once
    enforced), no ``O_PATH`` rule descriptor, no parent pipe: only the answers pipe and
    ``/dev/null``."""
    body = ("import os\nseen = {}\nfor fd in os.listdir('/proc/self/fd'):\n"
            "    try:\n        seen[int(fd)] = os.readlink('/proc/self/fd/' + fd)\n"
            "    except OSError:\n        pass\nreturn seen")
    seen = _outcome(_run(sandbox, body))
    assert seen.pop(ANSWERS_FD).startswith("pipe:")
    assert set(seen.values()) == {"/dev/null"}, seen


# -- reaching the zygote ------------------------------------------------------------------

_SYSCALLS = {"tgkill": 234, "rt_sigqueueinfo": 129, "tkill": 200, "kill": 62,
             "ioprio_set": 251, "sched_setparam": 142, "process_vm_readv": 310,
             "ptrace": 101, "kcmp": 312, "pidfd_open": 434}


@needs_seccomp
@x86_64
@pytest.mark.parametrize("call", [
    "sys(_SYSCALLS['tgkill'], zygote, zygote, 9)",
    "sys(_SYSCALLS['tgkill'], os.getpid(), zygote, 9)",
    "sys(_SYSCALLS['tkill'], zygote, 9)",
    "sys(_SYSCALLS['rt_sigqueueinfo'], zygote, 9, info)",
    "sys(_SYSCALLS['kill'], -1, 9)",
    "sys(_SYSCALLS['kill'], -os.getpgid(zygote), 9)",
    "sys(_SYSCALLS['kill'], 0, 9)",
    "sys(_SYSCALLS['ptrace'], 16, zygote, 0, 0)",  # PTRACE_ATTACH
    "sys(_SYSCALLS['process_vm_readv'], zygote, 0, 0, 0, 0, 0)",
    "sys(_SYSCALLS['kcmp'], zygote, os.getpid(), 0, 0, 0)",
    "sys(_SYSCALLS['pidfd_open'], zygote, 0)",
    "sys(_SYSCALLS['ioprio_set'], 3, 65534, 7)",  # IOPRIO_WHO_USER: every runner and zygote
    "sys(_SYSCALLS['sched_setparam'], zygote, info)",
    "os.setpriority(os.PRIO_USER, os.getuid(), 19)",
    "os.setpriority(os.PRIO_PGRP, 0, 19)",
    "os.sched_setscheduler(zygote, os.SCHED_IDLE, os.sched_param(0))",
    "os.open(f'/proc/{zygote}', os.O_RDONLY | os.O_DIRECTORY)",
    "open(f'/proc/{zygote}/maps').read()",
    "open(f'/proc/{zygote}/status').read()",
    "os.listdir(f'/proc/{zygote}/task')",
])
def test_the_zygote_cannot_be_signalled_traced_or_tuned_by_number(call: str) -> None:
    """The raw system calls, past Python's wrappers: each names the zygote (or every
    process of the shared user) and is refused."""
    body = (f"import ctypes, os\n_SYSCALLS = {_SYSCALLS!r}\nzygote = os.getppid()\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "info = ctypes.create_string_buffer(128)\n"
            "def sys(*args):\n"
            "    if libc.syscall(*args) != 0:\n"
            "        raise OSError(ctypes.get_errno(), 'refused')\n"
            f"try:\n    {call}\nexcept OSError as exc:\n"
            "    return [exc.errno, os.getppid() == zygote]\nreturn 'done'")
    with Sandbox(workers=1) as box:
        refused, zygote_alive = _outcome(_run_silenced(box, body))
        assert refused in (errno.EPERM, errno.EACCES, errno.ESRCH), call  # ESRCH: not its thread
        assert zygote_alive
        _later_units_are_right(box)


@needs_seccomp
@pytest.mark.parametrize("call", [
    "fcntl.fcntl(r, fcntl.F_SETOWN, zygote)",
    "fcntl.fcntl(r, 15, struct.pack('iI', 1, zygote))",  # F_SETOWN_EX, F_OWNER_PID
    "fcntl.ioctl(r, 0x8901, struct.pack('i', zygote))",  # FIOSETOWN
    "fcntl.ioctl(r, 0x8902, struct.pack('i', zygote))",  # SIOCSPGRP
    f"fcntl.fcntl({ANSWERS_FD}, fcntl.F_SETOWN, zygote)",
])
def test_a_file_cannot_name_the_zygote_its_signals_owner(call: str) -> None:
    """``F_SETOWN`` and ``F_SETSIG`` send a signal (``SIGKILL`` if asked) to whichever
    process owns a file when it turns readable; the kernel checks only that the owner has
    the setter's user, which the zygote now shares. Refused, so the zygote lives and so
    does the unit after the attack."""
    body = (f"import fcntl, os, signal, struct\nzygote = os.getppid()\nr, w = os.pipe()\n"
            f"try:\n    {call}\nexcept OSError as exc:\n    return type(exc).__name__\n"
            "fcntl.fcntl(r, 10, int(signal.SIGKILL))\n"  # F_SETSIG
            "fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK)\n"
            "os.write(w, b'x')\nreturn 'done'")
    with Sandbox(workers=1) as box:
        assert _outcome(_run(box, body)) == "PermissionError"
        _later_units_are_right(box)


OWNER_ATTACK = """
import fcntl, os, signal, sys, tempfile, time
from execbench.sandbox import confine, landlock
real = landlock.abi()
landlock.abi = lambda: min(real, 5)
root = tempfile.mkdtemp(dir=sys.argv[1])
plan = confine.probe(root, confine.seccomp_program())
if plan.user is not None:
    os.chown(root, *plan.user)
confine.enclose(plan)
layer = confine.next_layer(plan)
pid = os.fork()
if pid == 0:
    confine.apply(plan, layer)
    r, w = os.pipe()
    try:
        fcntl.fcntl(r, fcntl.F_SETOWN, os.getppid())
        fcntl.fcntl(r, 10, int(signal.SIGKILL))
        fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK)
        os.write(w, b"x")
    except OSError:
        pass
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.5)
print("alive", plan.landlock_abi, flush=True)
"""


@needs_seccomp
@needs_landlock
@as_root
def test_signal_ownership_is_refused_where_landlock_does_not_scope_signals(
        tmp_path: Path) -> None:
    """Landlock scopes signals, ``SIGIO`` among them, only from ABI 6 (Linux 6.12): below
    it, nothing but the filter keeps a runner from naming its zygote, of the same user,
    a file's owner and having it sent ``SIGKILL``. The zygote and runner here are made by
    ``confine`` itself, with Landlock held to ABI 5."""
    done = subprocess.run([sys.executable, "-c", OWNER_ATTACK, str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env=worker_environment(), cwd=os.getcwd())
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.split()[0] == "alive"


# -- what a unit leaves in the temporary root ---------------------------------------------

ACL = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, 0xFFFFFFFF)
                                       for tag, perm in ((1, 5), (4, 0), (0x20, 0)))
"""A POSIX access control list (version 2: owner ``r-x``, group and others nothing), which
sets a file's mode bits as chmod would."""


@needs_seccomp
@pytest.mark.parametrize("target", ["'d'", "'d'", "os.environ['HOME']"], ids=[
    "setxattr", "fsetxattr", "root"])
def test_an_access_list_cannot_lock_the_zygote_out_of_the_root(target: str,
                                                               request: pytest.FixtureRequest
                                                               ) -> None:
    """chmod is refused, but an access list changes a folder's mode as well: a folder
    holding a file, made read-only to its owner, is one the zygote (no longer root) cannot
    empty, so it would stop, and the unit after would be lost with it."""
    how = request.node.callspec.id
    setter = f"os.setxattr({target}, 'system.posix_acl_access', acl)" if how != "fsetxattr" \
        else "fd = os.open('d', os.O_RDONLY)\n    os.setxattr(fd, 'system.posix_acl_access', acl)"
    body = (f"import os\nacl = {ACL!r}\nos.mkdir('d')\nopen('d/x', 'w').write('x')\n"
            f"try:\n    {setter}\nexcept OSError as exc:\n    return type(exc).__name__\n"
            "return oct(os.stat('d').st_mode)")
    with Sandbox(workers=1) as box:
        assert _outcome(_run(box, body)) == "PermissionError"
        _later_units_are_right(box)


def test_folders_made_without_rights_are_still_removed() -> None:
    """Modes a program may still choose (``mkdir``'s, under any umask): folders without
    read, write or search rights, nested, empty or not, a ``umask`` of 0o777, symlinks to
    them and out of the root; the zygote, of the same user, empties the root."""
    body = ("import os\nos.mkdir('a')\nopen('a/f', 'w').write('x')\nos.mkdir('a/b')\n"
            "os.mkdir('a/b/c', 0)\nos.mkdir('a/n', 0)\nos.mkdir('e', 0)\nos.umask(0o777)\n"
            "os.mkdir('u')\nopen('g', 'w').write('y')\nos.symlink('/etc', 'link')\n"
            "os.symlink('a', 'inner')\nos.mkfifo('pipe')\n"
            "return sorted(os.listdir('.'))")
    look = "import os\n\ndef g():\n    return sorted(os.listdir(os.environ['HOME']))\n"
    with Sandbox(workers=1) as box:
        for _ in range(2):
            assert _outcome(_run(box, body)) == ["a", "e", "g", "inner", "link", "pipe", "u"]
            assert len(_outcome(box.run(Job(look, "g", "")))) == 1
        _later_units_are_right(box)


# -- accounting shared with the zygote ----------------------------------------------------

THREADS_HELD = """
import os, resource, sys, time
from execbench.sandbox.pool import Job, Limits, Sandbox
HOLD = int(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
resource.setrlimit(resource.RLIMIT_NPROC, (HOLD, hard))
hostile = sys.argv[2] + '''
import _thread, time
def f():
    assert unhook()
    _thread.stack_size(65536)
    try:
        while True:
            _thread.start_new_thread(time.sleep, (600,))
    except RuntimeError:
        pass
    time.sleep(600)
'''

def threads_of(uid):
    count = 0
    for entry in os.listdir('/proc'):
        try:
            status = open(f'/proc/{entry}/status').read()
        except OSError:
            continue
        if f'\\nUid:\\t{uid}\\t' in status:
            count += int(status.split('Threads:\\t')[1].split()[0])
    return count

with Sandbox(workers=2, limits=Limits(wall_seconds=600)) as box:
    box.run(Job('def g():\\n    return 0\\n', 'g', ''))
    box.submit(Job(hostile, 'f', ''))
    deadline = time.monotonic() + 120
    while threads_of(65534) < HOLD - 8 and time.monotonic() < deadline:
        time.sleep(0.05)
    print(threads_of(65534) >= HOLD - 8, flush=True)
    print([box.run(Job(f'def g():\\n    return {i}\\n', 'g', '')).value for i in range(3)],
          box.restarts, flush=True)
    os._exit(0)
"""


@as_root
def test_threads_another_runner_holds_do_not_cost_the_zygote_its_fork() -> None:
    """The kernel counts a user's processes and threads together against the forking
    process's ``RLIMIT_NPROC``; root is not counted, its runners' user is. A runner of one
    worker holds as many threads as the (soft) limit lets it; the other worker's zygote,
    of the same user, must still fork runners for the units after."""
    done = subprocess.run([sys.executable, "-c", THREADS_HELD, "200", UNHOOK],
                          capture_output=True, text=True, timeout=300,
                          env=worker_environment(), cwd=os.getcwd())
    held, results = done.stdout.splitlines()[:2]
    assert held == "True", done.stderr[-2000:]
    assert results == "[['int', 0], ['int', 1], ['int', 2]] 0", done.stderr[-2000:]


# -- the filter a runner holds: the worker's part and the runner's, stacked ---------------

_FORMER_LIST = (
    "execve", "execveat", "fork", "vfork", "socket", "socketpair", "ptrace",
    "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open", "pidfd_getfd",
    "pidfd_send_signal", "tkill", "mount", "umount2", "pivot_root", "chroot", "unshare",
    "setns", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
    "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "vhangup", "setuid", "setgid",
    "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
    "capset", "chmod", "fchmod", "fchmodat", "inotify_init", "inotify_init1",
    "inotify_add_watch", "fanotify_init", "fanotify_mark", "shmget", "shmat", "shmdt",
    "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop",
    "semctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
    "mq_getsetattr", "memfd_create", "memfd_secret",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
)
"""Every call refused outright by the single filter each runner loaded before the change
(plus the access lists, refused since), by name: the reference the two parts together must
keep."""
_EPERM, _ENOSYS = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
_ALLOW, _KILL = 0x7FFF0000, 0x80000000


def _verdict(program: bytes, nr: int, args: tuple[int, ...] = (), arch: int | None = None
             ) -> int:
    """What a classic-BPF seccomp ``program`` answers for a call: the instructions
    libseccomp emits (loads of ``seccomp_data``, scratch memory, ``and``, jumps, returns)."""
    arch = _native_arch() if arch is None else arch
    words = [nr, arch, 0, 0]
    for value in (*args, *[0] * (6 - len(args))):
        words += [value & 0xFFFFFFFF, (value >> 32) & 0xFFFFFFFF]
    data = struct.pack("=16I", *words)
    code = [struct.unpack_from("=HBBI", program, at) for at in range(0, len(program), 8)]
    a = x = pc = 0
    memory = [0] * 16
    while True:
        op, jt, jf, k = code[pc]
        pc += 1
        cls = op & 0x07
        if op == 0x20:  # ld [k]
            a = struct.unpack_from("=I", data, k)[0]
        elif op == 0x60:  # ld M[k]
            a = memory[k]
        elif op == 0x61:  # ldx M[k]
            x = memory[k]
        elif op == 0x02:  # st M[k]
            memory[k] = a
        elif op == 0x03:  # stx M[k]
            memory[k] = x
        elif op == 0x54:  # and #k
            a &= k
        elif op == 0x07:  # tax
            x = a
        elif op == 0x87:  # txa
            a = x
        elif op == 0x06:  # ret #k
            return k
        elif op == 0x16:  # ret a
            return a
        elif cls == 0x05:
            operand = x if op & 0x08 else k
            if op & 0xF0 == 0x00:  # ja
                pc += k
                continue
            test = {0x10: a == operand, 0x20: a > operand, 0x30: a >= operand,
                    0x40: bool(a & operand)}[op & 0xF0]
            pc += jt if test else jf
        else:
            raise AssertionError(f"unknown BPF instruction {op:#x}")


def _stacked(programs: tuple[bytes, ...], nr: int, args: tuple[int, ...] = (),
             arch: int | None = None) -> int:
    """The kernel's answer under several filters: the most restrictive action."""
    answers = [_verdict(program, nr, args, arch) for program in programs]
    return min(answers, key=lambda value: struct.unpack("=i", struct.pack(
        "=I", value & 0xFFFF0000))[0])


def _native_arch() -> int:
    seccomp = syscall_filter.module()
    return int(seccomp.system_arch())


def _number(name: str) -> int | None:
    seccomp = syscall_filter.module()
    try:
        number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
    except (OSError, ValueError):
        return None
    return number if number >= 0 else None


@pytest.fixture(scope="module")
def parts() -> tuple[bytes, bytes]:
    if syscall_filter.module() is None:
        pytest.skip("seccomp is not available here")
    programs = syscall_filter.compile_filters()
    runner = bytearray(programs.runner)
    for offset in syscall_filter._pid_slots(programs.runner):
        struct.pack_into("=I", runner, offset, 4242)  # as a runner of pid 4242 writes it
    return programs.worker, bytes(runner)


def test_the_parts_stacked_refuse_all_the_single_filter_did(parts: tuple[bytes, bytes]
                                                           ) -> None:
    numbered = {name: _number(name) for name in _FORMER_LIST}
    for name, number in numbered.items():
        if number is None:
            continue  # not a call of this architecture: it cannot be made
        for args in ((), (1, 2, 3, 4, 5, 6), (4242, 0xFFFFFFFF, 9)):
            assert _stacked(parts, number, args) == _EPERM, (name, args)


def test_the_parts_stacked_keep_the_argument_rules(parts: tuple[bytes, bytes]) -> None:
    n = _number
    cases = [
        (n("clone"), (0x11,), _EPERM), (n("clone"), (0x00010000 | 0xF00,), _ALLOW),
        (n("clone3"), (), _ENOSYS), (n("prctl"), (1, 0), _EPERM), (n("prctl"), (15,), _ALLOW),
        *[(n(call), (pid, 9), verdict) for call in ("kill", "tgkill", "rt_sigqueueinfo",
                                                     "rt_tgsigqueueinfo")
          for pid, verdict in ((4242, _ALLOW), (4241, _EPERM), (0, _EPERM),
                               (-1 & 0xFFFFFFFF, _EPERM), (1 << 32 | 4242, _EPERM))],
        *[(n(call), (pid,), verdict) for call in ("prlimit64", "sched_setaffinity",
                                                   "sched_setscheduler", "sched_setparam",
                                                   "sched_setattr", "migrate_pages",
                                                   "move_pages")
          for pid, verdict in ((0, _ALLOW), (4242, _EPERM), (1, _EPERM))],
        (n("setpriority"), (0, 0, 5), _ALLOW), (n("setpriority"), (0, 7, 5), _EPERM),
        (n("setpriority"), (1, 0, 5), _EPERM), (n("setpriority"), (2, 0, 5), _EPERM),
        (n("ioprio_set"), (1, 0, 0), _ALLOW), (n("ioprio_set"), (1, 7, 0), _EPERM),
        (n("ioprio_set"), (3, 0, 0), _EPERM),
        (n("ioctl"), (0, 0x5412), _EPERM), (n("ioctl"), (0, 0x541C), _EPERM),
        (n("ioctl"), (0, 0x8901), _EPERM), (n("ioctl"), (0, 0x5401), _ALLOW),
        (n("fcntl"), (0, 8), _EPERM), (n("fcntl"), (0, 15), _EPERM),
        (n("fcntl"), (0, 4), _ALLOW), (n("read"), (0,), _ALLOW),
    ]
    for number, args, expected in cases:
        assert _stacked(parts, number, args) == expected, (number, args)


def test_a_foreign_abi_is_killed_by_the_part_the_zygote_holds(parts: tuple[bytes, bytes]
                                                             ) -> None:
    """i386 and x32 calls are checked by neither part's rules: the worker's part, which
    the runner inherits, kills the caller."""
    worker, _ = parts
    if platform.machine() != "x86_64":
        pytest.skip("the foreign ABIs checked here are x86-64's")
    i386 = 0x40000003
    assert _verdict(worker, 37, (1, 9), arch=i386) & 0xFFFF0000 in (0, _KILL)
    assert _stacked(parts, 37, (1, 9), arch=i386) & 0xFFFF0000 in (0, _KILL)
    x32 = 0x40000000 | 62
    assert _stacked(parts, x32, (1, 9)) & 0xFFFF0000 in (0, _KILL)


def test_the_worker_part_alone_leaves_the_zygote_its_calls(parts: tuple[bytes, bytes]
                                                          ) -> None:
    """What the zygote needs (fork, signal and watch its runners) is left to it; all the
    rest of the list it holds itself, so that its runners inherit it."""
    worker, _ = parts
    for name, args in (("clone", (0x01200011,)), ("kill", (4242, 9)), ("pidfd_open", (4242,)),
                       ("wait4", (4242,)), ("prctl", (1, 9))):
        assert _verdict(worker, _number(name), args) == _ALLOW, name
    for name in ("execve", "ptrace", "chmod", "setxattr", "socket"):
        assert _verdict(worker, _number(name), ()) == _EPERM, name


@needs_seccomp
@x86_64
def test_an_i386_call_kills_the_runner_not_the_zygote() -> None:
    """``int 0x80`` (i386's ``kill(getppid(), SIGKILL)``), from code the program maps: the
    runner is killed, the worker lives on."""
    body = ("import ctypes, mmap, os\n"
            "code = bytes([0xB8, 37, 0, 0, 0, 0xBB]) + os.getppid().to_bytes(4, 'little') + "
            "bytes([0xB9, 9, 0, 0, 0, 0xCD, 0x80, 0xC3])\n"
            "page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | "
            "mmap.PROT_EXEC)\npage.write(code)\n"
            "address = ctypes.addressof(ctypes.c_char.from_buffer(page))\n"
            "ctypes.CFUNCTYPE(ctypes.c_int)(address)()\nreturn 'survived'")
    with Sandbox(workers=1) as box:
        trace = _run_silenced(box, body)
        assert trace.status == "crashed" and "SIGSYS" in (trace.detail or ""), trace
        _later_units_are_right(box)
