"""Values crossing the sandbox boundary and coming back from models, as typed JSON.

The bottom layer, standard library only: sources read literals, tasks read and compare
answers, and the tracer encodes what ran, all with this one package, so none of them
needs the sandbox to read a value. Nothing here executes text as code or calls a method
a value's class defines. Callers import the names below from ``execbench.values``; the
modules say which job each name belongs to."""

from __future__ import annotations

from execbench.values.alike import MAX_ALIKE, distinct
from execbench.values.decoding import decode, shown, to_literal
from execbench.values.encoding import (
    MAX_OBJECT_DEPTH,
    VIEW_NAMES,
    Encoder,
    encode,
    opaque_reason,
    view_name,
)
from execbench.values.equality import canonical, equal
from execbench.values.errors import LiteralError
from execbench.values.literals import (
    MAX_LITERAL_CHARS,
    is_view,
    literal_value,
    parse_call_nodes,
    parse_expression,
    parse_literal,
    read_encoded,
    view_items,
)
from execbench.values.shape import Encoded, is_encoding, is_exact, parts, tags

__all__ = [
    "MAX_ALIKE", "MAX_LITERAL_CHARS", "MAX_OBJECT_DEPTH", "Encoded", "Encoder", "LiteralError",
    "canonical", "decode", "distinct", "encode", "equal", "is_encoding", "is_exact",
    "literal_value", "opaque_reason", "parse_call_nodes", "parse_expression", "parse_literal",
    "read_encoded", "shown", "tags", "parts", "to_literal", "VIEW_NAMES", "view_name",
    "is_view", "view_items",
]
