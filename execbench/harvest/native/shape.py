"""The shape of a C or Java function (statements, loops, conditional blocks) read from its
text, in the form the Python analysis gives (``tasks.codesense.kinds.Function``), so the
facts of a recorded native call are derived by the same code as a Python call's
(``tasks.codesense.derive``).

A small recursive-descent reader over the text with comments, strings and characters
blanked out: blocks, ``if``/``else``, ``while``, ``for``, ``do``/``while``, ``switch``
with its labels, and simple statements ending at ``;``. It asks about what one statement
per line lets a line event tell: an ``if`` or ``while`` header whose body starts on a later
line is a branch; a simple statement assigning one plain name (``x = e``, ``int x = e``,
``x += e``, ``x++``) is an assignment of the kind ``kinds`` gives Python's (a call in the
value makes it ``call``, an operator ``arithmetic``, a literal ``constant``). Anything it
cannot read (a macro that hides a brace, K&R declarations) leaves the statement unasked,
never wrong: a fact needs a statement this reader understood.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from execbench.tasks.codesense.kinds import Function, Loop, Statement

_WORD = re.compile(r"[A-Za-z_]\w*")
_ASSIGN = re.compile(
    r"^(?:(?:[A-Za-z_][\w]*[\s*&]+)*?(?:[A-Za-z_]\w*\s*[\s*&]\s*))?"
    r"([A-Za-z_]\w*)\s*(=|\+=|-=|\*=|/=|%=|<<=|>>=|&=|\|=|\^=)(?!=)\s*(.+?)\s*;$", re.S)
_STEP = re.compile(r"^(?:(\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(\+\+|--))\s*;$")
_LITERAL = re.compile(r"^[-+]?\s*(?:\d[\w.]*|'.*'|\".*\"|NULL|null|true|false|nullptr)$",
                      re.S)
_OPERATOR = re.compile(r"[-+*/%^|&~!<>?]")
_KEYWORDS = frozenset({"if", "else", "while", "for", "do", "switch", "case", "default",
                       "return", "break", "continue", "goto", "sizeof", "new", "int",
                       "char", "long", "short", "unsigned", "signed", "double", "float",
                       "void", "const", "struct", "union", "enum", "static", "boolean",
                       "byte", "final", "instanceof", "this", "true", "false", "null",
                       "NULL", "volatile", "register", "typedef"})


def blank(code: str) -> str:
    """The code with comments, strings and character literals turned to spaces (newlines
    kept), so that braces and semicolons in them are not read."""
    out = list(code)
    i, n = 0, len(code)
    while i < n:
        two = code[i:i + 2]
        if two == "//":
            while i < n and code[i] != "\n":
                out[i] = " "
                i += 1
        elif two == "/*":
            end = code.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for j in range(i, end):
                out[j] = out[j] if code[j] == "\n" else " "
            i = end
        elif code[i] in "\"'":
            quote, j = code[i], i + 1
            while j < n and code[j] != quote and code[j] != "\n":
                j += 2 if code[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " " if code[k] != "\n" else "\n"
            i = j + 1
        else:
            i += 1
    return "".join(out)


@dataclass
class _Node:
    kind: str
    """``simple``, ``block``, ``if``, ``while``, ``for``, ``do``, ``switch``, ``label``."""
    line: int
    end: int
    """The last line of its own text: a header's closing parenthesis, a statement's ``;``."""
    last: int = 0
    """The last line of the whole statement, body included."""
    condition: str = ""
    body: list[_Node] = field(default_factory=list)
    orelse: list[_Node] = field(default_factory=list)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.starts = [m.start() for m in re.finditer("\n", text)]

    def line(self, position: int) -> int:
        low, high = 0, len(self.starts)
        while low < high:
            middle = (low + high) // 2
            if self.starts[middle] < position:
                low = middle + 1
            else:
                high = middle
        return low + 1

    def skip(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def word(self) -> str:
        match = _WORD.match(self.text, self.i)
        return match[0] if match else ""

    def matching(self, opening: str, closing: str) -> int:
        """From ``self.i`` at ``opening``, the index just past its ``closing``."""
        depth = 0
        for j in range(self.i, len(self.text)):
            if self.text[j] == opening:
                depth += 1
            elif self.text[j] == closing:
                depth -= 1
                if depth == 0:
                    return j + 1
        raise ValueError("unbalanced")

    def statements(self, until_brace: bool) -> list[_Node]:
        found: list[_Node] = []
        while True:
            self.skip()
            if self.i >= len(self.text):
                if until_brace:
                    raise ValueError("unclosed block")
                return found
            if self.text[self.i] == "}":
                if not until_brace:
                    raise ValueError("unbalanced")
                self.i += 1
                return found
            found.append(self.statement())

    def statement(self) -> _Node:
        self.skip()
        start = self.i
        line = self.line(start)
        if self.text[self.i] == "{":
            self.i += 1
            body = self.statements(True)
            return _Node("block", line, line, self.line(self.i - 1), body=body)
        word = self.word()
        if word in ("if", "while", "for", "switch"):
            self.i += len(word)
            self.skip()
            if self.i >= len(self.text) or self.text[self.i] != "(":
                raise ValueError(f"{word} without a condition")
            close = self.matching("(", ")")
            condition = self.text[self.i + 1:close - 1]
            self.i = close
            end = self.line(close - 1)
            body = [self.statement()]
            node = _Node(word, line, end, condition=condition, body=body)
            if word == "if":
                self.skip()
                if self.word() == "else":
                    self.i += 4
                    node.orelse = [self.statement()]
            node.last = max(n.last for n in node.body + node.orelse)
            return node
        if word == "do":
            self.i += 2
            body = [self.statement()]
            self.skip()
            if self.word() != "while":
                raise ValueError("do without while")
            self.i += 5
            self.skip()
            self.i = self.matching("(", ")")
            self._to_semicolon()
            return _Node("do", line, line, self.line(self.i - 1), body=body)
        if word in ("case", "default"):
            colon = self.text.find(":", self.i)
            if colon < 0:
                raise ValueError("label without a colon")
            self.i = colon + 1
            return _Node("label", line, line, line)
        self._to_semicolon()
        end = self.line(self.i - 1)
        return _Node("simple", line, end, end, condition=self.text[start:self.i])

    def _to_semicolon(self) -> None:
        depth = 0
        while self.i < len(self.text):
            char = self.text[self.i]
            self.i += 1
            if char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
                if depth < 0:
                    raise ValueError("unbalanced")
            elif char == ";" and depth == 0:
                return
        raise ValueError("a statement without ';'")


def analyse(code: str) -> Function | None:
    """The shape of the one function ``code`` holds (its header on line 1); None when the
    reader cannot follow its text."""
    text = blank(code)
    reader = _Reader(text)
    depth = 0
    for index, char in enumerate(text):  # the body's brace: the first outside parentheses
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "{" and depth == 0:
            reader.i = index + 1
            break
    else:
        return None
    try:
        body = reader.statements(True)
    except (ValueError, IndexError, RecursionError):
        return None
    lines = code.split("\n")
    shape = _Shape(lines)
    shape.walk(body)
    return Function(1, shape.statements, shape.continuation, tuple(shape.loops),
                    tuple(sorted(set(shape.conditional))))


class _Shape:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.statements: dict[int, Statement] = {}
        self.continuation: dict[int, int] = {}
        self.loops: list[Loop] = []
        self.conditional: list[int] = []

    def text(self, first: int, last: int) -> str:
        return "\n".join(self.lines[first - 1:last]).strip()

    def walk(self, nodes: list[_Node]) -> None:
        for node in nodes:
            if node.kind in ("block", "label"):
                self.walk(node.body)
                continue
            self.add(node)
            self.walk(node.body)
            self.walk(node.orelse)

    def add(self, node: _Node) -> None:
        body_line = _first_line(node.body)
        kind: str | None = None
        targets: tuple[str, ...] = ()
        reads: tuple[str, ...] = ()
        text = self.text(node.line, node.end)
        if node.kind in ("if", "while", "for"):
            text = text.rstrip("{").rstrip()
            if node.kind != "for":
                kind, reads = "branch", _names(node.condition)
            if body_line is not None and body_line > node.end:
                self.conditional.append(body_line)
                else_line = _first_line(node.orelse)
                if else_line is not None and else_line > node.end:
                    self.conditional.append(else_line)
            else:
                kind = None
            if node.kind != "if" and body_line is not None and body_line > node.end \
                    and not _forever(node):
                self.loops.append(Loop(node.line, frozenset(range(node.line, node.end + 1)),
                                       (body_line, max(n.last for n in node.body)),
                                       (node.line, node.last), text))
        elif node.kind == "simple":
            kind, targets, reads = _assignment(node.condition)
        self.statements.setdefault(node.line, Statement(node.line, node.end, text, kind,
                                                        targets, reads, body_line))
        for line in range(node.line + 1, node.end + 1):
            self.continuation.setdefault(line, node.line)


def _first_line(nodes: list[_Node]) -> int | None:
    for node in nodes:
        if node.kind == "block":
            inner = _first_line(node.body)
            if inner is not None:
                return inner
        elif node.kind != "label":
            return node.line
    return None


def _forever(node: _Node) -> bool:
    condition = node.condition.strip()
    if node.kind == "for":
        parts = condition.split(";")
        return len(parts) == 3 and not parts[1].strip()
    return condition in ("1", "true")


def _names(text: str) -> tuple[str, ...]:
    """Names read, in order of first appearance: words that are not keywords, not called,
    not a field after ``.`` or ``->``."""
    found: dict[str, None] = {}
    for match in _WORD.finditer(text):
        name, before = match[0], text[:match.start()].rstrip()
        after = text[match.end():].lstrip()
        if name in _KEYWORDS or before.endswith((".", "->")) or after.startswith("("):
            continue
        found.setdefault(name)
    return tuple(found)


def _assignment(text: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """The kind, target and names read of a simple statement that assigns one name."""
    statement = " ".join(text.split())
    step = _STEP.match(statement)
    if step:
        name = step[2] or step[3]
        return "arithmetic", (name,), (name,)
    match = _ASSIGN.match(statement)
    if match is None or "," in _top_level(match[3]) or match[1] in _KEYWORDS:
        return None, (), ()
    target, operator, value = match[1], match[2], match[3]
    augmented = operator != "="
    reads = _names(value)
    if augmented:
        reads = tuple(dict.fromkeys((target, *reads)))
    if re.search(r"(?<![\w])(?!sizeof\b)[A-Za-z_]\w*\s*\(", value):
        kind = "call"
    elif augmented or (_OPERATOR.search(value) and not _LITERAL.match(value)):
        kind = "arithmetic"
    elif _LITERAL.match(value):
        kind = "constant"
    else:
        kind = "assignment"
    return kind, (target,), reads


def _top_level(text: str) -> str:
    """The text outside any brackets (where a comma separates declarators)."""
    out, depth = [], 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0:
            out.append(char)
    return "".join(out)
