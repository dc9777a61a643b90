"""Contest programs with dates: the shape of LiveCodeBench's execution records.

Each record is one solution to a contest problem and one call to it::

    {"id": "sample_12", "question_id": "2777", "contest_id": "weekly-contest-344",
     "contest_date": "2023-05-07T00:00:00", "difficulty": "easy",
     "function_name": "distinctDifferenceArray",
     "code": "def distinctDifferenceArray(nums: List[int]) -> List[int]:\\n    ...",
     "input": "distinctDifferenceArray(nums = [1, 2, 3, 4, 5])",
     "output": "[-3, -1, 1, 3, 5]"}

``input`` is the whole call, the function's name included; ``output`` the literal text of
what it returns. ``contest_date`` becomes the program's date (``meta["date"]``, a day), which
``build --after``/``--before`` read, so a suite can hold only problems published after a
model's training cutoff. ``question_id``, ``contest_id`` and ``difficulty`` are kept in the
program's metadata, and so is the solution's length in characters (``chars``, without the
preamble below), which the contest filters read (``contest_filters``).

Contest solutions are written for a judge that has already imported what such code uses
(``List`` and the other ``typing`` names, ``defaultdict``, ``heappush``, ``gcd``, ...) and,
on LeetCode, defined the ``ListNode`` and ``TreeNode`` classes. The program gets exactly the
lines of that preamble (``PREAMBLE``) whose names its code uses and does not define itself,
above its own code, so the prompt shows what the program runs with and nothing else.
"""

from __future__ import annotations

import ast
import symtable

from execbench.program import Call, Program
from execbench.sources.dates import date_text
from execbench.sources.generic import build_program, parse_module, size_problem
from execbench.sources.jsonl import Record, RecordError

ID_KEY = "id"
KEYS = frozenset({"code", "function_name", "input", "output", "contest_date"})

_LIST_NODE = '''class ListNode:
    """A node of a singly linked list."""

    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next'''
_TREE_NODE = '''class TreeNode:
    """A node of a binary tree."""

    def __init__(self, val=0, left=None, right=None):
        self.val = val
        self.left = left
        self.right = right'''

_FROM: dict[str, tuple[str, ...]] = {
    "typing": ("Any", "Callable", "Deque", "Dict", "FrozenSet", "Generator", "Iterable",
               "Iterator", "List", "Optional", "Set", "Tuple", "Union"),
    "collections": ("Counter", "OrderedDict", "defaultdict", "deque"),
    "itertools": ("accumulate", "chain", "combinations", "combinations_with_replacement",
                  "count", "groupby", "islice", "pairwise", "permutations", "product",
                  "repeat", "zip_longest"),
    "functools": ("cache", "cmp_to_key", "lru_cache", "reduce"),
    "heapq": ("heapify", "heappop", "heappush", "heappushpop", "heapreplace", "merge",
              "nlargest", "nsmallest"),
    "bisect": ("bisect_left", "bisect_right", "insort"),
    "math": ("ceil", "comb", "factorial", "floor", "gcd", "inf", "isqrt", "lcm", "log",
             "log2", "log10", "perm", "prod", "sqrt"),
    "string": ("ascii_letters", "ascii_lowercase", "ascii_uppercase", "digits"),
    "operator": ("itemgetter", "xor"),
    "copy": ("deepcopy",),
}
_MODULES = ("bisect", "collections", "copy", "functools", "heapq", "itertools", "math",
            "operator", "random", "re", "string")
PREAMBLE: dict[str, str] = {
    **{module: f"import {module}" for module in _MODULES},
    **{name: module for module, names in _FROM.items() for name in names},
    "ListNode": _LIST_NODE, "TreeNode": _TREE_NODE,
}
"""What a contest judge has defined before a solution runs, by the name a solution uses:
``import X`` for a module, the module a name is imported from, or a class's definition.
A name imported from a module and also a module itself (``bisect``) is the module."""


def build(record: Record) -> Program:
    """A program from one contest record: the preamble it needs, then its code."""
    code = record.get("code")
    name = record.get("function_name")
    args = call_arguments(record.get("input"), name)
    date = date_text(record.get("contest_date"))
    meta: dict[str, str | int] = {"date": date, "chars": len(code)}
    for key in ("question_id", "contest_id", "difficulty"):
        value = record.optional(key, (str, int))
        if value is not None:
            meta[key] = value
    preamble = preamble_for(code)
    program_code = f"{preamble}\n\n\n{code}" if preamble else code
    return build_program(record, program_code, name,
                         [Call(args=args, expected=record.get("output"))], meta)


def call_arguments(text: str, name: str) -> str:
    """The argument-list text of ``text``, a call of ``name`` (``f(nums = [1, 2])``)."""
    if (too_large := size_problem(text)) is not None:
        raise RecordError(f"key 'input' of {too_large}")
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise RecordError(f"key 'input' is not a call of {name}: it does not parse") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise RecordError(f"key 'input' is not a call of {name}: {type(exc).__name__}") \
            from None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == name):
        raise RecordError(f"key 'input' should be a call of {name}(...)")
    stripped = text.strip()
    inner = stripped[stripped.index("(", node.func.end_col_offset) + 1:-1]
    return inner.strip()


def preamble_for(code: str) -> str:
    """The lines of ``PREAMBLE`` that ``code`` needs: names it reads from the module's scope
    without binding them there, in a fixed order (imports, then classes)."""
    parse_module(code)  # a clear reason for code that does not compile
    wanted = sorted(name for name in _free_names(code) if name in PREAMBLE)
    modules = [PREAMBLE[name] for name in wanted if name in _MODULES]
    imported: dict[str, list[str]] = {}
    for name in wanted:
        module = PREAMBLE[name]
        if name not in _MODULES and module in _FROM:
            imported.setdefault(module, []).append(name)
    lines = modules + [f"from {module} import {', '.join(names)}"
                       for module, names in sorted(imported.items())]
    classes = [PREAMBLE[name] for name in wanted if PREAMBLE[name].startswith("class ")]
    return "\n\n\n".join(part for part in ("\n".join(lines), *classes) if part)


def _free_names(code: str) -> set[str]:
    """Names the code reads as globals (in any scope) that its module does not bind."""
    table = symtable.symtable(code, "<program>", "exec")
    bound = {symbol.get_name() for symbol in table.get_symbols()
             if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()}
    read: set[str] = set()
    stack = [table]
    while stack:
        scope = stack.pop()
        for symbol in scope.get_symbols():
            if symbol.is_referenced() and (scope is table or symbol.is_global()):
                read.add(symbol.get_name())
        stack.extend(scope.get_children())
    return read - bound
