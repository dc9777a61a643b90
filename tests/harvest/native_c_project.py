"""A small C project the native harvest tests write: functions with loops, branches,
structs, arrays and pointers that alias and that do not, a Makefile whose ``test`` target
builds and runs its own test program (which checks its results and exits non-zero on a
failure)."""

from __future__ import annotations

from pathlib import Path

LIB = """\
#include <stdlib.h>
#include <string.h>
#include "lib.h"

int sum(const int *xs, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) {
        total += xs[i];
    }
    return total;
}

int classify(int x) {
    if (x < 0) {
        return -1;
    } else if (x == 0) {
        return 0;
    }
    return 1;
}

double scale(struct point *p, double k) {
    p->x = p->x * k;
    p->y = p->y * k;
    double total = p->x + p->y;
    return total;
}

void copy_into(int *dst, const int *src, int n) {
    int *d = dst;
    const int *s = src;
    while (n > 0) {
        *d = *s;
        d++;
        s++;
        n--;
    }
}

int same(const int *a, const int *b) {
    int r = a == b;
    return r;
}

int fact(int n) {
    if (n <= 1) {
        return 1;
    }
    int rest = fact(n - 1);
    return n * rest;
}

int tally(const int *xs, int n) {
    const int *first;
    const int *last;
    int count;
    count = 0;
    first = xs;
    for (int i = 0; i < n; i++) {
        count += xs[i];
    }
    last = xs + n - 1;
    return count + (first == last);
}

int shade(int n) {
    int x = 1;
    for (int i = 0; i < n; i++) {
        int x;
        x = i * 10;
        n = n + x - x;
    }
    return x;
}

struct pair make_pair(int a, long b) {
    struct pair r;
    r.a = a;
    r.b = b;
    strcpy(r.tag, "pair");
    return r;
}

int fill_sum(int n) {
    int v[64];
    int s = 0;
    for (int i = 0; i < 64; i++)
        v[i] = n;
    for (int i = 0; i < 64; i++)
        s += v[i];
    return s;
}

int heap_sum(const int *xs, int n) {
    int *copy = malloc(n * sizeof *copy);
    int total = 0;
    for (int i = 0; i < n; i++) {
        copy[i] = xs[i];
        total += copy[i];
    }
    free(copy);
    return total;
}

int name_len(const char *name) {
    int len = strlen(name);
    int doubled = len * 2;
    return doubled / 2;
}
"""

HEADER = """\
struct point { double x; double y; };
struct pair { int a; long b; char tag[6]; };
int sum(const int *xs, int n);
int classify(int x);
double scale(struct point *p, double k);
void copy_into(int *dst, const int *src, int n);
int same(const int *a, const int *b);
int fact(int n);
int tally(const int *xs, int n);
int shade(int n);
struct pair make_pair(int a, long b);
int fill_sum(int n);
int heap_sum(const int *xs, int n);
int name_len(const char *name);
"""

TESTS = """\
#include <stdio.h>
#include "../lib.h"

static int failures = 0;
#define CHECK(c) do { if (!(c)) { printf("FAIL %s\\n", #c); failures++; } } while (0)

int main(void) {
    int xs[4] = {1, 2, 3, 4};
    int ys[4] = {9, 9, 9, 9};
    struct point p = {1.5, 2.0};
    CHECK(sum(xs, 4) == 10);
    CHECK(sum(xs, 2) == 3);
    CHECK(classify(-3) == -1);
    CHECK(classify(0) == 0);
    CHECK(classify(7) == 1);
    CHECK(scale(&p, 2.0) == 7.0);
    CHECK(same(xs, xs) == 1);      /* a and b alias */
    CHECK(same(xs, ys) == 0);      /* they do not */
    CHECK(tally(xs, 4) == 10);     /* its locals start as what same() left on the stack */
    CHECK(heap_sum(xs, 4) == 10);  /* copy points at memory malloc filled, until written */
    CHECK(shade(2) == 1);          /* the loop's own x hides the outer one */
    struct pair made = make_pair(3, 4);  /* returned in memory: GDB holds the value */
    CHECK(made.a == 3 && made.b == 4 && made.tag[0] == 'p');
    CHECK(fill_sum(1) == 64);      /* a stack nobody else wrote on */
    copy_into(ys, xs, 4);          /* dst and src do not alias; d starts as dst */
    CHECK(ys[3] == 4);
    CHECK(fact(4) == 24);
    CHECK(name_len("abc") == 3);
    printf("%d failures\\n", failures);
    return failures != 0;
}
"""

MAKEFILE = """\
CFLAGS ?= -O2
test_lib: lib.c tests/test_lib.c lib.h
\t$(CC) $(CFLAGS) -o test_lib lib.c tests/test_lib.c
test: test_lib
\t./test_lib
.PHONY: test
"""


def write(root: Path) -> Path:
    """The project under ``root/project``."""
    project = root / "project"
    (project / "tests").mkdir(parents=True)
    (project / "lib.c").write_text(LIB)
    (project / "lib.h").write_text(HEADER)
    (project / "tests" / "test_lib.c").write_text(TESTS)
    (project / "Makefile").write_text(MAKEFILE)
    return project
