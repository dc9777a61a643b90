"""Small programs several test modules trace and ask about, each holding the statements
their questions need, kept once so the modules agree on their line numbers."""

SPLIT_SUM = """\
def f(s):
    words = s.split(',')
    total = 0
    for w in words[1:]:
        if len(w) > 2:
            total += len(w)
    return total
"""
"""A library call, a loop over a slice, a condition and a sum: a simulation's every
property kind."""

EVERY_STATEMENT = """\
def f(xs, n):
    c = 100
    total = n * 2
    for x in xs:
        if x > n:
            break
        total += x
    label = str(total)
    if total < 0:
        return None
    return label
"""
"""Every CodeSense statement kind (constant, arithmetic, assignment, call, branch), a
loop that breaks, and a return not taken."""

REPORTED = [
    {"id": "steps", "entry_point": "f", "calls": ["1", "5", "2"],
     "code": "def f(x):\n    if x > 3:\n        return x * 2\n    total = 0\n"
             "    for i in range(x):\n        total += i\n    return total\n"},
    {"id": "words", "entry_point": "g", "calls": ["'a b'", "''"],
     "code": "def g(s):\n    words = s.split()\n    if not words:\n        return 'none'\n"
             "    return '-'.join(w.upper() for w in words)\n"},
]
"""Two programs, five calls, that every task can ask about (a branch, a loop, a library
call): the report tests' runs, and the first programs of the cross-task vetting suite."""
