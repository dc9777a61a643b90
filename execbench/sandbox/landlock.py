"""Landlock: which paths a process may read and write, held by the kernel.

Rules are opened once and reused: the sandbox's zygote prepares the runners' rules (each a
path opened ``O_PATH`` and packed for ``landlock_add_rule``) in its probe, and each runner
only adds its own ``/proc`` entry before restricting itself, which saves it the path
look-ups and the copy-on-write faults of building them (a runner per unit pays its set-up
every unit). A long list of rules (one per entry of the standard library's folder, so as to
leave out its ``site-packages``) is ``seal``ed once into a ruleset and ``enforce``d on the
zygote itself, so that its runners inherit it at no cost, whatever its length. The harvest
jail uses ``restrict_paths`` with its own rules.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from execbench.sandbox.libc import PR_SET_NO_NEW_PRIVS, fail, libc

# include/uapi/linux/landlock.h; the system call numbers are the same on every architecture.
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_WRITE_TREE = sum(1 << bit for bit in range(4, 13))  # remove, make dir/reg/sock/fifo/...
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
"""Rights to read (and execute) under a path."""
READ_DATA = _FS_READ_FILE | _FS_READ_DIR
"""Rights to read under a path, not to execute (a process's own ``/proc`` entry)."""
LIST = _FS_READ_DIR
"""The right to list folders under a path, not to read their files."""
READABLE_SYSTEM_PATHS = ("/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache",
                         "/etc/localtime", "/sys/devices/system/cpu")
"""What the harvest jail reads of the system (pip and a project's tests need all of
``/usr``); sandbox runners read far less (``confine``)."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")



def abi() -> int:
    """The Landlock ABI version this kernel offers; 0 where it has none."""
    try:
        version = libc().syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                                 ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def write_rights(abi: int) -> int:
    """Rights to read, write, create and remove under a path, as far as ``abi`` knows them."""
    return READ | _FS_WRITE_FILE | _FS_WRITE_TREE | (_FS_REFER if abi >= 2 else 0) | \
        (_FS_TRUNCATE if abi >= 3 else 0)


def file_rights(abi: int) -> int:
    """Rights on one file (a device): open it to read, write or execute."""
    return _FS_EXECUTE | _FS_READ_FILE | _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)


@dataclass
class Prepared:
    """Rules opened and packed ahead of ``restrict``: the ruleset's attribute and, per path,
    its ``O_PATH`` descriptor with the packed rule naming it."""

    abi: int
    attr: bytes
    rules: list[tuple[int, bytes]] = field(default_factory=list)


def prepare(abi: int, rules: list[tuple[str, int]], restrict_tcp: bool = True) -> Prepared:
    """Open and pack ``rules`` (path, rights): file access only as they grant it; TCP
    bind/connect refused when ``restrict_tcp`` (ABI 4); signals and abstract Unix sockets
    scoped to the restricted process (ABI 6)."""
    fs = write_rights(abi) | (_FS_IOCTL_DEV if abi >= 5 else 0)
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 and restrict_tcp else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    prepared = Prepared(abi, attr)
    for path, rights in rules:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        prepared.rules.append((fd, _rule(abi, fd, rights)))
    return prepared


def _rule(abi: int, fd: int, rights: int) -> bytes:
    """The packed rule granting ``rights`` beneath ``fd`` (on a file, those a file has)."""
    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        rights &= file_rights(abi)
    return struct.pack("=Qi", rights, fd)


def _ruleset(prepared: Prepared, rules: Sequence[tuple[int, bytes]]) -> int:
    """A new ruleset of ``prepared``'s kind holding ``rules``; its descriptor."""
    call = libc().syscall
    ruleset = call(_SYS_LANDLOCK_CREATE_RULESET, prepared.attr,
                   ctypes.c_size_t(len(prepared.attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        fail("landlock_create_ruleset")
    try:
        _add(ruleset, rules)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def _add(ruleset: int, rules: Sequence[tuple[int, bytes]]) -> None:
    """Add packed rules (with the descriptor each names, for the error) to ``ruleset``."""
    call = libc().syscall
    for fd, rule in rules:
        if call(_SYS_LANDLOCK_ADD_RULE, ruleset, _LANDLOCK_RULE_PATH_BENEATH, rule,
                ctypes.c_uint32(0)) != 0:
            fail(f"landlock_add_rule {os.readlink(f'/proc/self/fd/{fd}')}")


def _add_paths(abi: int, ruleset: int, rules: Sequence[tuple[str, int]]) -> None:
    """Add ``rules`` (path, rights) to ``ruleset``, each path opened, added and closed in
    turn: the few calls a forked child makes to complete a ruleset made for it."""
    for path, rights in rules:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        try:
            _add(ruleset, [(fd, _rule(abi, fd, rights))])
        finally:
            os.close(fd)


def seal(abi: int, rules: Sequence[tuple[str, int]], restrict_tcp: bool = True) -> int:
    """``rules`` as one ruleset, to enforce later with ``restrict``'s ``under`` (in this
    process or a forked child); its descriptor. Each path is opened, added and closed in
    turn, so a long list never holds many descriptors at once."""
    ruleset = _ruleset(prepare(abi, [], restrict_tcp), ())
    try:
        _add_paths(abi, ruleset, rules)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def enforce(ruleset: int) -> None:
    """Confine the calling process (and what it starts) by a sealed ruleset, then close it.
    Sets ``no_new_privs``, which Landlock needs without ``CAP_SYS_ADMIN``."""
    try:
        if libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            fail("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc().syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


def ruleset(prepared: Prepared) -> int:
    """A new ruleset holding ``prepared``'s rules, for a forked child to complete with its
    own and enforce (``restrict``'s ``made``): made in the parent, the child's share of
    the work is a few calls."""
    return _ruleset(prepared, prepared.rules)


def restrict(prepared: Prepared, extra: Sequence[tuple[str, int]] = (),
             under: int | None = None, made: int | None = None) -> None:
    """Confine the calling process (and what it starts) by ``prepared``'s rules and
    ``extra`` ones, and first, when given, by the sealed ruleset ``under``: each is a layer
    of its own, and an access must pass both. ``made``: ``ruleset(prepared)``, made ahead
    (by the parent); it gets ``extra`` here. Then close the descriptors (this process's
    copies). Sets ``no_new_privs``, which Landlock needs without ``CAP_SYS_ADMIN``."""
    layers = [] if under is None else [under]
    try:
        if made is None:
            own = prepare(prepared.abi, list(extra))
            try:
                made = _ruleset(prepared, (*prepared.rules, *own.rules))
            finally:
                for fd, _ in own.rules:
                    os.close(fd)
        else:
            _add_paths(prepared.abi, made, extra)
        layers.append(made)
    finally:
        for fd, _ in prepared.rules:
            os.close(fd)
    for layer in layers:  # a failure leaves the process to exit, unconfined
        enforce(layer)


def restrict_paths(abi: int, rules: list[tuple[str, int]], restrict_tcp: bool = True) -> None:
    """``prepare`` and ``restrict`` in one step, for a process confined once."""
    restrict(prepare(abi, rules, restrict_tcp))
