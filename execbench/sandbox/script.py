"""How the sandbox runs a program that reads standard input and prints (a contest program,
a script): the mark its entry point carries. The tracer runs such a program as a judge
does (``tracer.record``); everything else about it (its sources, how its output is
compared) lives above the sandbox."""

STDIN = "<stdin>"
"""The entry point of a program that reads standard input and prints: it has no function
to call. Each of its calls is one string literal, the text it reads on stdin, and what it
prints is its result. Not a name, so no function can be mistaken for it."""
