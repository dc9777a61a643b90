"""The C recorder where processes race: a test program whose parent, forked child and
exec'd grandchild call the project's functions at once, so that one process's return often
coincides with another's stop (an ``exec``, a breakpoint). A call whose step another
process's stop cut short is dropped (``docs/harvest.md``), so which racing calls are kept
varies; every call kept must be whole, with its own return value (the breakpoint at a
return address is per frame and thread), and the calls made while no other process runs
are all kept (a return that raced another process's ``exec`` was once lost with its call).
A call left by ``longjmp`` is dropped, and a later call at the same place is a call of its
own; a loop back to a function's first line is not a new call, nor is a dropped call's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from execbench.harvest.options import HarvestOptions
from execbench.harvest.project import harvest
from tests.helpers.harvests import needs_gdb_and_jail

LIB = """\
#include <setjmp.h>

long square(long x) {
    long y = x * x;
    return y;
}

void leave(jmp_buf *to, int code) {
    int sent = code + 1;
    longjmp(*to, sent);
}

int maybe_leave(jmp_buf *to, int code) {
    if (code > 0)
        longjmp(*to, code);
    return code;
}

int spin(int n) {
    do {
        n--;
    } while (n > 0);
    return n;
}

int after(int code) {
    int twice = code * 2;
    return twice;
}

static jmp_buf trap;

static void give_up(void) {
    longjmp(trap, 1);
}

int ratio(int a, int b) {
    if (setjmp(trap))
        return -1;
    if (b == 0)
        give_up();
    return a / b;
}

int ratios(int n) {
    int got[4];
    do {
        n--;
        got[n] = ratio(60, n - 3);
    } while (n > 0);
    return got[0] + got[1] + got[2] + got[3];
}
"""

RACE = r"""
#include <setjmp.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

long square(long x);
void leave(jmp_buf *to, int code);
int maybe_leave(jmp_buf *to, int code);
int spin(int n);
int after(int code);
int ratios(int n);

static void squares(long from) {
    for (long i = from; i < from + ROUNDS; i++) square(i);
}

int main(int argc, char **argv) {
    if (argc == 2) {  /* the grandchild, exec'd while the others run */
        squares(atol(argv[1]));
        return 0;
    }
    jmp_buf to;
    int code = setjmp(to);
    if (code == 0) leave(&to, 6);
    after(code);
    for (int k = 3; k >= 0; k--)  /* the same frame id each time: one call each */
        if (setjmp(to) == 0) maybe_leave(&to, k);
    spin(3);  /* its loop jumps back to its first line: the same call, not a new one */
    /* dropped when ratio's longjmp leaves give_up, it goes round its loop unobserved */
    if (ratios(4) != -111) return 1;
    square(1000);  /* alone: always kept */
    pid_t child = fork();
    if (child == 0) {
        if (fork() == 0) execl("/proc/self/exe", "race", "200", (char *)0);
        squares(100);
        int status;
        while (wait(&status) > 0) {}
        _exit(0);
    }
    squares(0);
    int status;
    waitpid(child, &status, 0);
    return 0;
}
"""

MAKEFILE = """\
race: lib.c race.c
\t$(CC) $(CFLAGS) -DROUNDS=25 -o race lib.c race.c
test: race
\t./race
"""

THREADED_LIB = """\
#include <setjmp.h>
#include <stdlib.h>
#include <ucontext.h>

extern char *page;
extern ucontext_t again;
jmp_buf back;

int inner(int v) {
    int w = v * 3;
    return w + 1;
}

int outer(int id, int k) {
    int a = inner(id * 100 + k);
    int b = a + 1;
    return b;
}

int tick(int n) {
    int hist[3];
    do {
        n--;
        hist[n] = n * 2;
    } while (n > 0);
    return hist[0] + hist[1] + hist[2];
}

void jumper(void) {
    longjmp(back, 1);
}

int landing(int n) {
    n = n + 1;
    if (setjmp(back) == 0)
        jumper();
    n = n * 10;
    page[0] = 1;
    int r = n + 3;
    return r;
}

int check(int v) {
    int w = v * 2;
    if (w > 10)
        abort();
    return w;
}

int resume(int n) {
    int a = n * 10;
    if (n < 2)
        setcontext(&again);
    a = a + 1;
    return a;
}
"""

THREADED_MAIN = r"""
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

int inner(int v);
int outer(int id, int k);
int tick(int n);
int landing(int n);
int check(int v);
int resume(int n);
char *page;
ucontext_t again;
static volatile int done, wrong;

static void *ticker(void *unused) {
    (void)unused;
    while (!done) wrong |= tick(3) != 6;
    return 0;
}

static void unprotect(int s, siginfo_t *si, void *u) {
    (void)s; (void)si; (void)u;
    mprotect(page, 4096, PROT_READ | PROT_WRITE);
}

int main(void) {
    int failed = inner(1000) != 3001;  /* alone: always kept */
    pthread_t t;
    pthread_create(&t, 0, ticker, 0);
    for (int r = 0; r < 40; r++) failed |= outer(1, r) != 3 * (100 + r) + 2;
    done = 1;
    pthread_join(t, 0);
    failed |= wrong;
    /* a longjmp back into a recorded call, then a fault its handler repairs */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = unprotect;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, 0);
    page = mmap(0, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    failed |= landing(4) != 53;
    /* a death test: the child aborts, the parent goes on */
    pid_t child = fork();
    if (child == 0) { check(6); _exit(0); }
    int status;
    waitpid(child, &status, 0);
    failed |= !WIFSIGNALED(status) || check(1) != 2;
    /* a context switch back to here from inside a call, then the same call again */
    volatile int tries = 0, got = 0;
    getcontext(&again);
    tries++;
    if (tries <= 2) got = resume(tries);
    failed |= got != 21;
    return failed;
}
"""

THREADED_MAKEFILE = """\
threads: lib.c main.c
\t$(CC) $(CFLAGS) -pthread -o threads lib.c main.c
test: threads
\t./threads
"""


def _harvested(root: Path, files: dict[str, str], build: str) -> dict[str, Any]:
    needs_gdb_and_jail()
    project = root / "project"
    project.mkdir()
    for name, text in files.items():
        (project / name).write_text(text)
    out = root / "harvest.jsonl"
    result = harvest(project, out, HarvestOptions(
        language="c", build=build, test="make test", max_calls=200, timeout=600),
        log=root / "run.log")
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    return {"result": result, "records": records, "log": root / "run.log"}


@pytest.fixture(scope="module")
def raced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _harvested(tmp_path_factory.mktemp("native-c-races"),
                      {"lib.c": LIB, "race.c": RACE, "Makefile": MAKEFILE}, "make race")


@pytest.fixture(scope="module")
def threaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _harvested(tmp_path_factory.mktemp("native-c-threads"),
                      {"lib.c": THREADED_LIB, "main.c": THREADED_MAIN,
                       "Makefile": THREADED_MAKEFILE}, "make threads")


def test_every_call_kept_is_whole_with_its_own_return(raced: dict[str, Any]) -> None:
    assert raced["result"].pytest_exit == 0, raced["log"].read_text()[-2000:]
    calls = raced["records"]["lib.c:square"]["calls"]
    returned = {int(re.fullmatch(r"x = (\d+)", call["args"]).group(1)): call["trace"]
                for call in calls}
    assert 1000 in returned
    assert set(returned) <= {1000, *range(25), *range(100, 125), *range(200, 225)}
    for x, trace in returned.items():
        assert trace["value"] == ["int", x * x], x
        assert trace["lines"] == [2, 3], x  # both body lines seen, in every call kept


def test_a_call_left_by_longjmp_has_no_return_and_the_next_call_does(
        raced: dict[str, Any]) -> None:
    records = raced["records"]
    assert "lib.c:leave" not in records  # no return: no record
    [after] = records["lib.c:after"]["calls"]
    assert after["args"] == "code = 7" and after["trace"]["value"] == ["int", 14]
    # three calls left by longjmp, then one that returns, all at the same frame id: only
    # that one is kept, with its own arguments
    [stayed] = records["lib.c:maybe_leave"]["calls"]
    assert stayed["args"].endswith(", code = 0"), stayed["args"]
    assert stayed["trace"]["value"] == ["int", 0] and stayed["trace"]["lines"] == [2, 4]


def test_a_loop_back_to_a_functions_first_line_is_the_same_call(raced: dict[str, Any]) -> None:
    [spin] = raced["records"]["lib.c:spin"]["calls"]
    assert spin["args"] == "n = 3" and spin["trace"]["value"] == ["int", 0]
    assert spin["trace"]["lines"] == [3, 4, 5]  # "do {" has no code of its own


def test_a_dropped_call_going_round_its_loop_is_not_taken_for_a_new_one(
        raced: dict[str, Any]) -> None:
    """``ratios``' calls are dropped when the ``longjmp`` in the call it makes leaves; its
    loop then jumps back to its breakpoint's address in the same frame. That stop is not a
    call that begins: no call with the arguments the loop left (``n = 3``) is kept, and
    the program's result stands."""
    assert raced["result"].pytest_exit == 0, raced["log"].read_text()[-2000:]
    for call in raced["records"].get("lib.c:ratios", {"calls": []})["calls"]:
        assert (call["args"], call["trace"]["value"]) == ("n = 4", ["int", -111])


def test_threads_signals_and_a_death_test_keep_only_right_calls(
        threaded: dict[str, Any]) -> None:
    """A second thread calling a project function while the first steps its calls (GDB
    deletes a return breakpoint when another thread stops), a ``longjmp`` back into a
    recorded call followed by a fault its handler repairs, a child that aborts, and a
    ``setcontext`` out of a call: the tests pass, and every call kept is right."""
    assert threaded["result"].pytest_exit == 0, threaded["log"].read_text()[-2000:]
    records = threaded["records"]
    truth: dict[str, Any] = {
        "inner": lambda v: 3 * v + 1, "tick": lambda n: n * (n - 1),
        "outer": lambda id_, k: 3 * (100 * id_ + k) + 2, "check": lambda v: 2 * v}
    for name, of in truth.items():
        for call in records.get(f"lib.c:{name}", {"calls": []})["calls"]:
            args = [int(v) for v in re.findall(r"= (-?\d+)", call["args"])]
            assert call["trace"]["value"] == ["int", of(*args)], (name, call["args"])
    assert any(call["args"] == "v = 1000" for call in records["lib.c:inner"]["calls"])
    assert [call["args"] for call in records["lib.c:check"]["calls"]] == ["v = 1"]
    assert "lib.c:landing" not in records  # left by longjmp, then its rest ran unobserved
    # resume(1) leaves by setcontext; resume(2), at the same frame id, is a call of its own
    [resumed] = records["lib.c:resume"]["calls"]
    assert resumed["args"] == "n = 2" and resumed["trace"]["value"] == ["int", 21]
