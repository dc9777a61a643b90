"""The DSL-List language: its programs as trees, their s-expression form, and their
Python translation, which is what a program means (see ``dsl`` for how programs are drawn).

The language
------------
Every list holds ints and every polymorphic ``t0``/``t1`` is ``int`` or ``List(int)``:

* lists: the parameters ``a1`` (``a2``), ``empty``, ``(if B L L)``, ``(map F L)``,
  ``(append I L)``, ``(extend L L)``, ``(init L)`` (drop the last), ``(tail L)`` (drop
  the first);
* ints: literals ``0..5``, ``(if B I I)``, ``(length L)``, ``(index I L)``; ``-1`` is a
  literal only as the first argument of ``index`` (the last element);
* bools: ``(== I I)``, ``(< I I)``, ``(> I I)``, ``(&& B B)``, ``(|| B B)``, ``(! B)``;
* mapping functions (``F``, of type ``int -> int``): only the partial application
  ``(if B I)``, whose missing last argument is the list element. ``map (if c t) xs``
  replaces each element of ``xs`` by ``t`` where ``c`` holds and keeps it otherwise. No
  other primitive can take an int element as its last argument and return an int
  (``append``, ``length`` and ``index`` would need lists of lists, comparisons return
  bools), so this is the whole set.

Programs have type ``List(int) -> List(int)`` (``1arg``) or ``List(int) -> List(int) ->
List(int)`` (``2arg``) and are written as s-expressions, e.g.
``(map (if (== (index 0 a1) 5) 2) (tail a2))``; ``parse`` reads that form back.

The *depth* of a program is the height of its expression tree: a leaf (parameter,
literal, ``empty``) has depth 1 and any other node one more than its deepest argument;
a partial ``(if B I)`` is a node with two arguments. ``(tail a1)`` has depth 2.

Meaning: the Python translation decides
---------------------------------------
``translate`` follows the paper's Algorithm 2 and Table 5, and the Python it writes is
what gets run and traced, so it *is* the semantics. Read functionally, the DSL would
copy lists; the translation does not:

* ``append``/``extend``/``init``/``tail`` change their last (list) argument in place
  and return that same list: ``(append x L)`` is ``L.append(x)``, ``(extend M L)`` is
  ``L.extend(M)``, ``(init L)`` is ``L.pop()``, ``(tail L)`` is ``L.pop(0)``; so
  ``(append 3 a1)`` also changes ``a1`` for every use of ``a1`` that runs later;
* statements run in post-order (arguments left to right, then the node), while int and
  bool subexpressions are inlined where their consumer runs, so they see every change
  made before that point; ``empty`` and ``if`` nodes get the variables ``v1, v2, ...``
  in that same order, and all ``empty`` lists are created together on the first line;
* ``(if B X Y)`` runs the statements of both branches first, then binds a new variable
  to one branch's value: an alias of a list, never a copy;
* ``map`` loops over the list's indices and writes each new element back in place; ``B``
  and ``I`` of its function are evaluated afresh for each element;
* ``&&``/``||``/``!`` are Python's ``and``/``or``/``not``, so a right operand that would
  fail (an index out of range) is not evaluated when the left one decides.
"""

from __future__ import annotations

from dataclasses import dataclass

ENTRY_POINT = "f"

COMPARISONS = ("==", "<", ">")
LOGICAL = {"&&": "and", "||": "or"}
LITERALS = tuple(str(k) for k in range(6))
_ARITIES = {"if": 3, "map": 2, "append": 2, "extend": 2, "init": 1, "tail": 1, "length": 1,
            "index": 2, "!": 1, **dict.fromkeys([*COMPARISONS, *LOGICAL], 2)}
"""Full applications; the partial ``(if B I)`` is only read as ``map``'s function."""


@dataclass(frozen=True)
class Node:
    """One node of a DSL program: a primitive, literal or parameter applied to arguments."""

    op: str
    args: tuple[Node, ...] = ()

    def __str__(self) -> str:
        if not self.args:
            return self.op
        return "(" + " ".join([self.op, *map(str, self.args)]) + ")"


def height(node: Node) -> int:
    """Depth of a tree: 1 for a leaf, else one more than the deepest argument."""
    return 1 + max((height(a) for a in node.args), default=0)


def parse(text: str) -> Node:
    """Read an s-expression as written by ``str(Node)`` (no type checking)."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    node, end = _parse_at(tokens, 0)
    if end != len(tokens):
        raise ValueError(f"trailing text after the program: {' '.join(tokens[end:])}")
    return node


def _parse_at(tokens: list[str], at: int) -> tuple[Node, int]:
    if at >= len(tokens) or tokens[at] == ")":
        raise ValueError("unbalanced parentheses")
    if tokens[at] != "(":
        return Node(tokens[at]), at + 1
    if at + 1 >= len(tokens) or tokens[at + 1] in ("(", ")"):
        raise ValueError("a parenthesis must open with a primitive name")
    op, at = tokens[at + 1], at + 2
    args = []
    while at < len(tokens) and tokens[at] != ")":
        arg, at = _parse_at(tokens, at)
        args.append(arg)
    if at >= len(tokens):
        raise ValueError("unbalanced parentheses")
    return Node(op, tuple(args)), at + 1


class _Writer:
    """Algorithm 2: one post-order walk that names, inlines and writes statements."""

    def __init__(self, arity: int) -> None:
        self.arity = arity
        self.lines: list[str] = []
        self.empties: list[str] = []
        self.variables = 0
        self.code = ""
        self.repeats = False
        """Set when two Python expressions that must differ came out the same."""

    def write(self, tree: Node) -> _Writer:
        result = self.expression(tree)
        params = ", ".join(f"a{k}" for k in range(1, self.arity + 1))
        head = [f"def {ENTRY_POINT}({params}):"]
        if len(self.empties) == 1:
            head.append(f"    {self.empties[0]} = []")
        elif self.empties:
            head.append(f"    {', '.join(self.empties)} = {', '.join(['[]'] * len(self.empties))}")
        self.code = "\n".join([*head, *self.lines, f"    return {result}"]) + "\n"
        return self

    def new_variable(self) -> str:
        self.variables += 1
        return f"v{self.variables}"

    def differ(self, left: str, right: str) -> None:
        self.repeats = self.repeats or left == right

    def statement(self, *lines: str, indent: int = 1) -> None:
        self.lines.extend("    " * indent + line for line in lines)

    def expression(self, node: Node) -> str:
        """Write the statements of ``node``'s subtree and return the Python for its value."""
        op, args = node.op, node.args
        if not args:
            return self.leaf(op)
        if _ARITIES.get(op) != len(args):
            raise ValueError(f"cannot translate {node}: not a full application")
        if op == "map":
            return self.map(args)
        values = [self.expression(a) for a in args]
        if op == "if":
            name = self.new_variable()
            self.branch(name, *values, indent=1)
            return name
        if op in ("append", "extend"):
            self.statement(f"{values[1]}.{op}({values[0]})")
            if op == "extend":
                self.differ(*values)
            return values[1]
        if op in ("init", "tail"):
            self.statement(f"{values[0]}.pop({'' if op == 'init' else '0'})")
            return values[0]
        if op == "length":
            return f"len({values[0]})"
        if op == "index":
            return f"{values[1]}[{values[0]}]"
        if op in COMPARISONS:
            self.differ(*values)
            return f"{values[0]} {op} {values[1]}"
        if op in LOGICAL:
            self.differ(*values)
            left, right = (f"({v})" if a.op in LOGICAL else v
                           for a, v in zip(args, values, strict=True))
            return f"{left} {LOGICAL[op]} {right}"
        return f"not ({values[0]})"

    def leaf(self, op: str) -> str:
        if op == "empty":
            name = self.new_variable()
            self.empties.append(name)
            return name
        if op in ("-1", *LITERALS) or op in {f"a{k}" for k in range(1, self.arity + 1)}:
            return op
        raise ValueError(f"cannot translate {op!r}: not a literal or parameter")

    def branch(self, name: str, condition: str, then: str, other: str, indent: int) -> None:
        self.differ(then, other)
        self.statement(f"if {condition}:", f"    {name} = {then}", "else:",
                       f"    {name} = {other}", indent=indent)

    def map(self, args: tuple[Node, ...]) -> str:
        function, items = args
        if function.op != "if" or len(function.args) != 2:
            raise ValueError(f"map takes a partial (if B I), not {function}")
        condition, then = (self.expression(a) for a in function.args)
        name = self.new_variable()
        target = self.expression(items)
        element = f"{target}[i]"
        self.statement(f"for i in range(len({target})):")
        self.branch(name, condition, then, element, indent=2)
        self.statement(f"{element} = {name}", indent=2)
        return target


@dataclass(frozen=True)
class Translation:
    code: str
    """The Python function ``f(a1[, a2])`` computing the tree (Algorithm 2, Table 5)."""
    repeats: bool
    """Two Python expressions that must differ came out the same: in-place updates made
    different subtrees one expression, so the sampler refuses the tree."""


def translation(tree: Node, arity: int) -> Translation:
    writer = _Writer(arity).write(tree)
    return Translation(writer.code, writer.repeats)


def translate(tree: Node, arity: int) -> str:
    """The Python function ``f(a1[, a2])`` computing ``tree`` (Algorithm 2, Table 5)."""
    return translation(tree, arity).code
