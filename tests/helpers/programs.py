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
