"""Statement-level control-flow graphs of functions, their prime paths, and the prime paths
a traced run tours.

**Nodes** are the statements of one function's body that produce a line event when they
run, named by their first line: simple statements, compound headers (``if``, ``elif``,
``for``, ``while``, ``with``, ``try``, ``match``), ``except`` clauses and ``case`` lines.
``else:`` and ``finally:`` keywords, docstrings and ``global``/``nonlocal`` produce no line
event and are not nodes. Nested function and class definitions are one node each (their
bodies are graphs of their own).

**Edges** follow the statements' semantics: a header to its body and past it, a loop's
last statement back to its header, ``break`` past the loop (skipping its ``else``),
``continue`` to the header, ``return`` and an uncaught ``raise`` to the function's exit
(no node). Exceptions raised implicitly (a failing call, an ``assert``) are not edges, as
usual for CFGs, except inside ``try``: every statement of a ``try`` body may go to each of
its ``except`` clauses. ``finally`` bodies run after the ``try`` body, its handlers and its
``else``; a ``return`` inside ``try`` is drawn straight to the exit (the ``finally`` it
would run first is not drawn), a documented simplification.

**Prime paths** (Ammann and Offutt): the simple paths (no node twice, except that a
simple cycle ends where it starts) that are not a proper sub-path of another simple path,
found by extending paths one edge at a time. Their number can grow exponentially with
nested branches, so enumeration stops at ``max_paths`` and the graph is then marked as
having too many (``PrimePaths.complete`` is false), never hung on.

**Tours**: a run's node sequence per call of the function is read from the tracer's line
events of that call's frame (events of other frames, such as comprehensions, nested
functions or recursive calls, belong to those frames); a prime path is toured when it
appears as a contiguous part of some call's sequence. The second line event a ``with``
header gets when its block exits is not a visit of the node.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

MAX_PRIME_PATHS = 5_000


@dataclass
class FunctionGraph:
    """The CFG of one function: nodes are statement lines, ``succ`` their successors."""

    name: str
    line: int
    """The ``def`` line, as the tracer names the function's frames."""
    entry: int | None
    succ: dict[int, list[int]] = field(default_factory=dict)
    statement_of: dict[int, int] = field(default_factory=dict)
    """Every source line of a node's own text (not its body) -> the node."""
    with_bodies: dict[int, frozenset[int]] = field(default_factory=dict)
    """``with`` header -> the nodes of its block (to drop the header's exit event)."""

    @property
    def nodes(self) -> list[int]:
        return sorted(self.succ)

    def edges(self) -> list[tuple[int, int]]:
        return sorted((a, b) for a, targets in self.succ.items() for b in targets)


@dataclass(frozen=True)
class PrimePaths:
    paths: tuple[tuple[int, ...], ...]
    complete: bool
    """False when enumeration stopped at the cap: ``paths`` is then empty."""


class _Builder:
    """Builds one function's graph; ``block`` returns the entry node of a statement list
    given where control goes after it."""

    def __init__(self, graph: FunctionGraph) -> None:
        self.graph = graph
        self.loops: list[tuple[int, int | None]] = []  # (header, node after the loop)
        self.handlers: list[list[int]] = []  # except-clause nodes of enclosing try bodies

    def node(self, line: int, first: int, last: int) -> int:
        self.graph.succ.setdefault(line, [])
        for number in range(first, last + 1):
            self.graph.statement_of[number] = line
        return line

    def edge(self, source: int, target: int | None) -> None:
        targets = self.graph.succ[source]
        if target is not None and target not in targets:
            targets.append(target)

    def block(self, stmts: Sequence[ast.stmt], after: int | None) -> int | None:
        entry = after
        for stmt in reversed([s for s in stmts if _is_node(s, stmts)]):
            entry = self.statement(stmt, entry)
        return entry

    def statement(self, stmt: ast.stmt, after: int | None) -> int:
        header_end = _header_end(stmt)
        line = self.node(stmt.lineno, stmt.lineno, header_end)
        for handlers in self.handlers:
            for handler in handlers:
                self.edge(line, handler)
        if isinstance(stmt, ast.If):
            self.edge(line, self.block(stmt.body, after))
            self.edge(line, self.block(stmt.orelse, after) if stmt.orelse else after)
        elif isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
            past = self.block(stmt.orelse, after) if stmt.orelse else after
            self.loops.append((line, after))
            body = self.block(stmt.body, line)
            self.loops.pop()
            self.edge(line, body)
            if not (isinstance(stmt, ast.While) and _always_true(stmt.test)):
                self.edge(line, past)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            body = self.block(stmt.body, after)
            self.edge(line, body)
            self.graph.with_bodies[line] = frozenset(_lines_of(stmt.body, self.graph))
        elif isinstance(stmt, ast.Try | getattr(ast, "TryStar", ast.Try)):
            self._try(stmt, line, after)
        elif isinstance(stmt, ast.Match):
            self.edge(line, self._cases(stmt.cases, after))
        elif isinstance(stmt, ast.Break):
            self.edge(line, self.loops[-1][1] if self.loops else after)
        elif isinstance(stmt, ast.Continue):
            self.edge(line, self.loops[-1][0] if self.loops else after)
        elif not isinstance(stmt, ast.Return | ast.Raise):  # those leave (or go to a handler)
            self.edge(line, after)
        return line

    def _cases(self, cases: list[ast.match_case], after: int | None) -> int | None:
        """Cases are tried in order: each ``case`` line goes to its body or to the next
        case; the last goes past the ``match`` unless it cannot fail (``case _:``)."""
        following = after
        for case in reversed(cases):
            pattern = case.pattern
            case_line = self.node(pattern.lineno, pattern.lineno,
                                  pattern.end_lineno or pattern.lineno)
            self.edge(case_line, self.block(case.body, after))
            irrefutable = isinstance(pattern, ast.MatchAs) and pattern.pattern is None \
                and case.guard is None
            if not (irrefutable and case is cases[-1]):
                self.edge(case_line, following)
            following = case_line
        return following

    def _try(self, stmt: ast.Try, line: int, after: int | None) -> None:
        final = self.block(stmt.finalbody, after) if stmt.finalbody else after
        handler_nodes = []
        for handler in stmt.handlers:
            handler_line = self.node(handler.lineno, handler.lineno,
                                     _handler_header_end(handler))
            self.edge(handler_line, self.block(handler.body, final))
            handler_nodes.append(handler_line)
        past_body = self.block(stmt.orelse, final) if stmt.orelse else final
        self.handlers.append(handler_nodes)
        body = self.block(stmt.body, past_body)
        self.handlers.pop()
        self.edge(line, body)


def _is_node(stmt: ast.stmt, siblings: Sequence[ast.stmt]) -> bool:
    """False for statements that produce no line event: docstrings, global, nonlocal."""
    if isinstance(stmt, ast.Global | ast.Nonlocal):
        return False
    is_string = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and \
        isinstance(stmt.value.value, str)
    return not (is_string and stmt is siblings[0])


def _always_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value) is True


def _header_end(stmt: ast.stmt) -> int:
    """The last line of a statement's own text: its header for a compound statement."""
    bodies = [getattr(stmt, name) for name in ("body", "cases") if getattr(stmt, name, None)]
    if bodies and isinstance(bodies[0], list):
        first = bodies[0][0]
        start = first.pattern.lineno if isinstance(first, ast.match_case) else first.lineno
        return max(stmt.lineno, start - 1)
    return stmt.end_lineno or stmt.lineno


def _handler_header_end(handler: ast.ExceptHandler) -> int:
    return max(handler.lineno, handler.body[0].lineno - 1)


def _lines_of(stmts: Iterable[ast.stmt], graph: FunctionGraph) -> set[int]:
    nodes: set[int] = set()
    for stmt in stmts:
        for inner in ast.walk(stmt):
            if isinstance(inner, ast.stmt | ast.ExceptHandler) and inner.lineno in graph.succ:
                nodes.add(inner.lineno)
            elif isinstance(inner, ast.match_case) and inner.pattern.lineno in graph.succ:
                nodes.add(inner.pattern.lineno)
    return nodes


def function_graphs(code: str) -> dict[int, FunctionGraph]:
    """The graph of every function (methods and nested functions included), by ``def``
    line."""
    graphs: dict[int, FunctionGraph] = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            graph = FunctionGraph(name=node.name, line=node.lineno, entry=None)
            graph.entry = _Builder(graph).block(node.body, None)
            graphs[node.lineno] = graph
    return graphs


def prime_paths(succ: dict[int, list[int]], max_paths: int = MAX_PRIME_PATHS) -> PrimePaths:
    """Every prime path of the graph, sorted; empty and incomplete past ``max_paths``."""
    frontier = [(node,) for node in sorted(succ)]
    ended: list[tuple[int, ...]] = []
    while frontier:
        extended: list[tuple[int, ...]] = []
        for path in frontier:
            if len(path) > 1 and path[0] == path[-1]:
                ended.append(path)  # a simple cycle cannot grow
                continue
            grown = False
            for target in succ.get(path[-1], ()):
                if target not in path or target == path[0]:
                    extended.append((*path, target))
                    grown = True
            if not grown:
                ended.append(path)
        frontier = extended
        if len(ended) + len(frontier) > max_paths:
            return PrimePaths((), False)
    inside: set[tuple[int, ...]] = set()
    for path in ended:
        for start in range(len(path)):
            for stop in range(start + 1, len(path) + 1):
                if stop - start < len(path):
                    inside.add(path[start:stop])
    return PrimePaths(tuple(sorted(p for p in set(ended) if p not in inside)), True)


def entry_exit_paths(graph: FunctionGraph, max_paths: int = 200) -> list[tuple[int, ...]]:
    """Paths from the function's entry to its exit (a node with no successor within the
    function), each node at most once, at most ``max_paths`` of them in depth-first order.
    A loop's body is gone through at most once: an edge back to a node on the path goes on
    through it to the first nodes not yet on it (the loop's way out, past every loop it
    closes), so each path is one way through the branches."""
    if graph.entry is None:
        return []

    def onward(path: tuple[int, ...]) -> list[int]:
        """The next nodes off the path, going on through nodes already on it (loop
        headers an edge goes back to, however deeply nested)."""
        found: list[int] = []
        seen: set[int] = set()
        todo = list(graph.succ.get(path[-1], ()))
        while todo:
            target = todo.pop(0)
            if target in seen:
                continue
            seen.add(target)
            if target in path:
                todo += graph.succ.get(target, [])
            else:
                found.append(target)
        return found

    paths: list[tuple[int, ...]] = []
    stack: list[tuple[int, ...]] = [(graph.entry,)]
    while stack and len(paths) < max_paths:
        path = stack.pop()
        if not graph.succ.get(path[-1]):
            paths.append(path)
        stack += [(*path, target) for target in reversed(onward(path))]
    return paths


def call_sequences(graph: FunctionGraph, events: Sequence[Sequence[int]],
                   frames: Sequence[Mapping[str, object]]) -> list[list[int]]:
    """The node sequence of each call of ``graph``'s function in a trace's line events
    (``[line, frame]`` pairs; ``frames`` names each frame's function and ``def`` line)."""
    own = {index for index, frame in enumerate(frames)
           if frame.get("line") == graph.line and frame.get("function") == graph.name}
    sequences: dict[int, list[int]] = {}
    for line, frame in events:
        if frame not in own:
            continue
        node = graph.statement_of.get(line)
        if node is None:
            continue
        sequence = sequences.setdefault(frame, [])
        if sequence and sequence[-1] == node:
            continue  # several events on one statement's lines: one visit
        body = graph.with_bodies.get(node)
        if body is not None and sequence and sequence[-1] in body:
            continue  # the header's event as its block exits
        sequence.append(node)
    return [sequences[index] for index in sorted(sequences)]


def toured(paths: Iterable[tuple[int, ...]], sequences: Iterable[Sequence[int]]
           ) -> frozenset[tuple[int, ...]]:
    """The prime paths that appear as a contiguous part of some sequence."""
    paths = list(paths)
    lengths = {len(p) for p in paths}
    windows: set[tuple[int, ...]] = set()
    for sequence in sequences:
        sequence = tuple(sequence)
        for length in lengths:
            windows.update(sequence[i:i + length] for i in range(len(sequence) - length + 1))
    return frozenset(p for p in paths if p in windows)
