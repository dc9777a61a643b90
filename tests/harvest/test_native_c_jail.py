"""A hostile C project under ``execbench harvest --language c``: its test program tries to
write and read outside the scratch copy, reach this process's network and environment,
trace processes outside the jail (``ptrace`` is let through for GDB) and leave a daemon
behind (a double fork that execs the test program again, no shell: a shell's ``vfork``
while GDB steps another process can hang GDB, which the harvest's ``--timeout`` ends; the
docs say so); this process checks that none worked. The daemon's start is reported by the
first child while the parent waits for it: a call made while another of the test's
processes runs may be dropped (``docs/harvest.md``), which would make the report come and
go.

The attacks report through the one channel they have, the arguments of a project function
(``leak(route, outcome)``), which the recorder records; every check that matters is made
here on this machine's state, as ``test_jail`` does for a Python project.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from execbench.harvest.options import HarvestOptions
from execbench.harvest.project import harvest
from tests.helpers.harvests import needs_gdb_and_jail, processes_with

SECRET = "sk-native-jail-test-81d0"
TOKEN = f"execbench-native-daemon-{os.getpid()}"

LIB = """\
int leak(const char *route, const char *outcome) {
    int said = route[0] + outcome[0];
    return said;
}
#if 0
""" + '"' + '\\"' * 200_000 + """
""" + '"' + "\\'" * 200_000 + """\\
";
#endif
"""
"""The reporting function, and lines the compiler skips that the recorder reads when it
blanks the file's comments and literals: a quote followed by 200,000 escaped ones, never
closed; and a string of 200,000 escaped apostrophes continued by a backslash-newline. A
blanking that retried each quote to the end of its line would take hours here."""

ATTACKS = r"""
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int leak(const char *route, const char *outcome);

static void said(const char *route, int ok) {
    char text[64];
    if (ok) snprintf(text, sizeof text, "GOT THROUGH");
    else snprintf(text, sizeof text, "refused %d", errno);
    leak(route, text);
}

int main(int argc, char **argv) {
    if (argc == 3) {  /* the daemon, started below: it outlives its parent, then writes */
        sleep(3);
        int out = open(argv[1], O_WRONLY | O_CREAT, 0644);
        if (out >= 0) write(out, "here", 4);
        return 0;
    }
    const char *secret = getenv("EXECBENCH_TEST_SECRET");
    leak("environ", secret ? secret : "refused");
    int fd = open("{outside}", O_WRONLY | O_APPEND);
    said("outside write", fd >= 0 && write(fd, "pwned", 5) == 5);
    fd = open("{outside}", O_RDONLY);
    said("outside read", fd >= 0);
    fd = open("{original}/planted.txt", O_WRONLY | O_CREAT, 0644);
    said("original create", fd >= 0);
    int sock = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {0};
    to.sin_family = AF_INET;
    to.sin_port = htons({port});
    to.sin_addr.s_addr = inet_addr("127.0.0.1");
    said("connect", sock >= 0 && connect(sock, (struct sockaddr *)&to, sizeof to) == 0);
    said("ptrace outer", ptrace(PTRACE_ATTACH, {outer}, 0, 0) == 0);
    said("ptrace init", ptrace(PTRACE_ATTACH, 1, 0, 0) == 0);
    fd = open("/proc/{outer}/mem", O_RDONLY);
    said("outer mem", fd >= 0);
    pid_t first = fork();
    if (first == 0) {
        setsid();
        leak("daemon", "started");  /* while the parent waits: no other process runs */
        if (fork() == 0) {
            execl("/proc/self/exe", "attacks", "{marker}", "{token}", (char *)0);
        }
        _exit(0);
    }
    waitpid(first, 0, 0);
    return 0;
}
"""

MAKEFILE = """\
attacks: lib.c attacks.c
\t$(CC) $(CFLAGS) -o attacks lib.c attacks.c
test: attacks
\t./attacks
"""


@pytest.fixture(scope="module")
def attacked() -> Iterator[dict]:
    needs_gdb_and_jail()
    folder = Path(tempfile.mkdtemp(prefix="execbench-native-jail-"))
    folder.chmod(0o777)
    try:
        project = folder / "project"
        project.mkdir()
        outside, marker, out = folder / "outside.txt", folder / "marker.txt", folder / "out.jsonl"
        outside.write_text(SECRET)
        outside.chmod(0o666)  # only the jail keeps the tests out
        with socket.socket() as listener, pytest.MonkeyPatch.context() as patch:
            patch.setenv("EXECBENCH_TEST_SECRET", SECRET)
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            attacks = ATTACKS
            for name, value in (("outside", outside), ("original", project),
                                ("port", listener.getsockname()[1]), ("outer", os.getpid()),
                                ("marker", marker), ("token", TOKEN)):
                attacks = attacks.replace("{" + name + "}", str(value))
            (project / "attacks.c").write_text(attacks)
            (project / "lib.c").write_text(LIB)
            (project / "Makefile").write_text(MAKEFILE)
            before = sorted(p.name for p in project.iterdir())
            result = harvest(project, out, HarvestOptions(
                language="c", build="make attacks", test="make test", max_calls=50,
                max_file_bytes=1 << 20, max_temp_bytes=4 << 20, timeout=300),
                log=folder / "run.log")
            left = processes_with(TOKEN)
            listener.setblocking(False)
            try:
                listener.accept()[0].close()
                connected = True
            except BlockingIOError:
                connected = False
        written = out.read_bytes()
        time.sleep(4)  # the daemon would have written by now
        records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
        leaks = {}
        for call in records["lib.c:leak"]["calls"]:
            route, outcome = re.fullmatch(r'route = "(.*)", outcome = "(.*)"',
                                          call["args"]).groups()
            leaks[route] = outcome
        yield {"result": result, "leaks": leaks, "left": left, "connected": connected,
               "marker": marker, "outside": outside, "out": out, "written": written,
               "before": before, "after": sorted(p.name for p in project.iterdir()),
               "log": (folder / "run.log").read_text(errors="replace")}
    finally:
        shutil.rmtree(folder)


def test_the_hostile_tests_ran_and_reported(attacked: dict) -> None:
    assert attacked["result"].pytest_exit == 0, attacked["log"][-2000:]
    assert set(attacked["leaks"]) == {"environ", "outside write", "outside read",
                                      "original create", "connect", "ptrace outer",
                                      "ptrace init", "outer mem", "daemon"}


def test_nothing_got_out(attacked: dict) -> None:
    leaks = attacked["leaks"]
    assert {route: said for route, said in leaks.items() if not said.startswith("refused")} \
        == {"daemon": "started"}
    assert SECRET not in attacked["out"].read_text() and SECRET not in attacked["log"]
    assert attacked["outside"].read_text() == SECRET
    assert attacked["after"] == attacked["before"]  # nothing planted in the original
    assert attacked["connected"] is False


def test_no_daemon_outlives_the_harvest(attacked: dict) -> None:
    assert attacked["left"] == [] and processes_with(TOKEN) == []
    assert not attacked["marker"].exists()
    assert attacked["out"].read_bytes() == attacked["written"]
