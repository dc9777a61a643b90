"""An independent recomputation of the ``properties`` recorder's values, for the tests.

The recorder instruments the program's tree so each expression reports its own value. This
module gets the same values another way: it runs the *unmodified* program under its own
``sys.settrace`` and, at the line event that starts a ``for`` loop or a condition's
evaluation (before the statement evaluates anything), evaluates the expression's source
text with ``eval`` on the frame's variables. That is only the same value when evaluating
the text has no effect, so only expressions that are side-effect free by construction are
chosen (``sites``), and each one left out is counted under a reason (``SKIP_REASONS``):

* ``several lines``: the header spans lines, so its line events do not mark one evaluation;
* ``body on the header line``: no line event tells a loop's start from its iterations;
* ``calls code``: it calls or names something other than a side-effect-free builtin or a
  non-mutating method (a function of the program, ``list.pop``, ``print``): evaluating it
  again could change the run or cost as much as the run;
* ``lambda, walrus or yield``: binding or deferred code.

Where the expression is evaluated: at the first line event of the loop's line in a frame
that did not come from the loop's own body (a later event on that line is the loop taking
its next item), and at every line event of a condition's line. Comprehension and lambda
frames are ignored (their line events fall on the statement's line but start nothing).
The driver runs in the sandbox like any program.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass

from execbench.sandbox.properties import clauses_of, parts_of

PURE_BUILTINS = frozenset({
    "len", "abs", "min", "max", "sum", "sorted", "isinstance", "int", "str", "float", "bool",
    "all", "any", "ord", "chr", "round", "set", "list", "tuple", "range", "enumerate", "zip",
    "reversed", "dict", "frozenset", "divmod", "pow", "bin", "hex", "oct", "repr"})
PURE_METHODS = frozenset({
    "split", "rsplit", "strip", "lstrip", "rstrip", "lower", "upper", "replace", "join",
    "count", "index", "find", "rfind", "startswith", "endswith", "isdigit", "isalpha",
    "isupper", "islower", "isspace", "isalnum", "items", "keys", "values", "get", "copy",
    "swapcase", "title", "capitalize", "splitlines", "zfill"})
SKIP_REASONS = ("several lines", "body on the header line", "calls code",
                "lambda, walrus or yield")
PER_LINE = 30
"""Evaluations of one line recomputed per call (the first ones; the recorder's are in the
same order)."""
MAX_ITEMS = 1_000
_BINDING = (ast.Lambda, ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)


@dataclass(frozen=True)
class Site:
    """One statement whose expressions are recomputed: ``texts`` are the whole expression
    then its recorded sub-expressions (a loop's parts, a condition's clauses)."""

    kind: str
    """``loop`` or ``test``."""
    line: int
    texts: tuple[str, ...]
    body: frozenset[int]
    """For a loop, the lines of its body: an event of the loop's line that follows one of
    them is the loop taking an item, not a new run of the loop."""
    node: ast.expr


def _why_impure(node: ast.expr, defined: set[str]) -> str | None:
    for inner in ast.walk(node):
        if isinstance(inner, _BINDING):
            return "lambda, walrus or yield"
        if isinstance(inner, ast.Name) and inner.id in defined:
            return "calls code"
        if isinstance(inner, ast.Call):
            func = inner.func
            pure = isinstance(func, ast.Name) and func.id in PURE_BUILTINS or \
                isinstance(func, ast.Attribute) and func.attr in PURE_METHODS
            if not pure:
                return "calls code"
    return None


def sites(code: str) -> tuple[list[Site], dict[str, int]]:
    """The loops and conditions of ``code`` whose expressions can be recomputed, and how
    many others were left out, by reason."""
    tree = ast.parse(code)
    defined = {n.name for n in ast.walk(tree)
               if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    found: list[Site] = []
    skipped = dict.fromkeys(SKIP_REASONS, 0)
    for node in ast.walk(tree):
        if isinstance(node, ast.For):
            expr, kind, parts = node.iter, "loop", parts_of(node.iter)
        elif isinstance(node, ast.If | ast.While):
            expr, kind, parts = node.test, "test", clauses_of(node.test)
        else:
            continue
        reason = "several lines" if expr.end_lineno != node.lineno else \
            "body on the header line" if node.body[0].lineno == node.lineno else \
            _why_impure(expr, defined)
        if reason is not None:
            skipped[reason] += 1
            continue
        body = frozenset(line for stmt in node.body
                         for line in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
        found.append(Site(kind, node.lineno, tuple(ast.unparse(e) for e in [expr, *parts]),
                          body if kind == "loop" else frozenset(), expr))
    return found, skipped


def job_args(code: str, entry_point: str, args: str, chosen: list[Site]) -> str:
    """The argument text of a ``DRIVER`` call for one call of a program."""
    plan = {site.line: [site.kind, list(site.texts), sorted(site.body)] for site in chosen}
    return ", ".join(repr(x) for x in (code, entry_point, args, json.dumps(plan), PER_LINE,
                                       MAX_ITEMS))


DRIVER = '''\
import sys


def recompute(code, entry_point, args, plan, per_line, max_items):
    import itertools
    import json
    from execbench.values import encode, view_name

    plan = {int(line): (kind, texts, set(body))
            for line, (kind, texts, body) in json.loads(plan).items()}
    namespace = {"__name__": "__checked__"}
    exec(compile(code, "<checked>", "exec"), namespace)
    call_args, call_kwargs = eval("(lambda *a, **k: (a, k))(" + args + "\\n)", namespace)
    out = {line: [] for line in plan}
    last = {}

    def value(text, env, kind):
        try:
            found = eval(text, env)
            if kind == "loop" and (iter(found) is found or view_name(found) is not None):
                return ["iterator", [encode(x) for x in itertools.islice(found, max_items)]]
        except Exception as exc:
            return ["error", type(exc).__name__]
        return ["value", encode(found)]

    def local(frame, event, arg):
        if event != "line":
            return local
        line = frame.f_lineno
        before, last[id(frame)] = last.get(id(frame)), line
        site = plan.get(line)
        if site is None or len(out[line]) >= per_line:
            return local
        kind, texts, body = site
        if kind == "loop" and before in body:
            return local
        env = dict(frame.f_globals)
        env.update(frame.f_locals)
        out[line].append([value(text, env, kind if n == 0 else "part")
                          for n, text in enumerate(texts)])
        return local

    def start(frame, event, arg):
        code = frame.f_code
        if code.co_filename != "<checked>" or code.co_name.startswith("<"):
            return None
        last[id(frame)] = None
        return local

    sys.settrace(start)
    try:
        namespace[entry_point](*call_args, **call_kwargs)
    finally:
        sys.settrace(None)
    return json.dumps(out)
'''


def evaluated(test: ast.expr, truths: dict[int, bool]) -> set[int]:
    """The ``and``/``or`` operands (by node id) that Python evaluates, given each one's
    truth: an ``and`` stops after a false operand, an ``or`` after a true one."""
    reached: set[int] = set()

    def visit(node: ast.expr, going: bool) -> None:
        if isinstance(node, ast.BoolOp):
            for operand in node.values:
                if going:
                    reached.add(id(operand))
                visit(operand, going)
                if going and truths[id(operand)] is not isinstance(node.op, ast.And):
                    going = False
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            visit(node.operand, going)

    visit(test, True)
    return reached
