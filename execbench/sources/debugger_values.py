"""Values as GDB and JDB print them, read into typed values (``execbench.values``) and written
back the way those debuggers show them.

CodeSense recorded its C values with GDB and its Java values with JDB. Their texts are
read here, never evaluated, with one small recursive-descent reader:

* numbers: ``42``, ``-7``, ``0x10UL`` (a constant the recorder copied from the source, C
  suffixes allowed), ``1.5``, ``1e-05``, ``inf``, ``-nan(0x8000000000000)``; GDB prints a
  ``double`` 1.0 as ``1``, so in these languages an integral number is an ``int`` and a
  number compares by its value (``1`` equals ``1.0``);
* characters: ``65 'A'`` (GDB gives the code and the glyph), ``'A'`` or ``'\\n'`` alone; a
  character is its code, so an answer may give the code, the glyph or both (both must
  agree);
* strings: ``"abc"`` with C escapes, or a pointer to one, ``0x72995f "abc"`` (the address
  dropped: addresses differ from run to run and are never asked about); GDB's
  ``"abc"...`` (cut short) is no whole value;
* ``NULL``, ``null`` and ``0x0`` are the null value; ``true`` and ``false`` are booleans;
* braces: ``{1, 2, 3}`` is an array (a list), ``{a = 1, b = {c = 2}}`` a struct (a
  mapping from field name to value), ``x <repeats 3 times>`` repeats an element (what
  the repeats expand to counts against ``MAX_ITEMS``); brackets, ``["a", "b"]``, are an
  array as JDB and JSON write it;
* a pointer to code or to no readable value (``0x5555 <main>``, ``(struct s *) 0x7fff``,
  ``{void (int)} 0x5555 <f>``) raises ``AddressValue``: its only content is an address;
* ``<optimized out>`` and ``<error: ...>`` raise ``Unreadable``: the recorder read nothing.

GDB's structured records (``{"type_category", "concrete_type", "value"}``, nested, as
CodeSense's C files hold a function's inputs) are read by ``read_record``; a leaf that
cannot be read stays in the value as its published text (opaque), so the rest of the
value is still shown.
"""

from __future__ import annotations

import math
import re
from typing import Any

from execbench.values import Encoded, LiteralError

MAX_ITEMS = 10_000
"""The most elements a value may expand to (``<repeats N times>`` included)."""
MAX_DEPTH = 50

NULLS = frozenset({"NULL", "null", "nullptr", "0x0"})
NOT_RECORDED = "<not recorded>"
AN_ADDRESS = "<an address>"
PLACEHOLDERS = frozenset({NOT_RECORDED, AN_ADDRESS})
"""What a value nobody could read, or one whose only content is an address, is shown as
(``["object", "unknown", text]``), here and by the C recorder, which writes the same texts
(it runs in GDB's Python and cannot import this module). Such a text is no value anyone
could predict, so a value that is only one is never a truth
(``tasks.codesense.tasks.concrete_truth``); inside a bigger value it says which part went
unread."""


class AddressValue(LiteralError):
    """The value is an address alone: nothing a question may ask for."""


class Unreadable(LiteralError):
    """The recorder could not read the value (optimised out, unreadable memory)."""


_TOKEN = re.compile(r"""
    \s*(?:
      (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<char>'(?:[^'\\]|\\(?:[0-7]{1,3}|x[0-9a-fA-F]+|.))')
    | (?P<angle><[^<>]*(?:<[^<>]*>[^<>]*)*>)
    | (?P<number>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)
                 (?:[uUlLfFdD]{1,3})?(?![\w.]))
    | (?P<word>[-+]?[A-Za-z_][\w:.$]*(?:\(0x[0-9a-fA-F]+\))?)
    | (?P<punct>[{}(),=*\[\]])
    | (?P<ellipsis>\.\.\.)
    )""", re.VERBOSE | re.DOTALL)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f",
            "v": "\v", "e": "\x1b", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_REPEATS = re.compile(r"<repeats (\d{1,9}) times>")
_BLANK_END = re.compile(r"\s*\Z")
_OCTAL = re.compile(r"[0-7]{1,3}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_UNICODE = re.compile(r"[0-9a-fA-F]{1,4}")


def _unescape(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        octal = _OCTAL.match(body, i + 1)  # at a position: a slice per escape is quadratic
        if octal:
            out.append(chr(int(octal[0], 8)))
            i += 1 + len(octal[0])
        elif nxt in "xu" and (hexa := (_UNICODE if nxt == "u" else _HEX).match(body, i + 2)):
            code = int(hexa[0][:8], 16)
            if code > 0x10FFFF:
                raise LiteralError(f"\\{nxt}{hexa[0]} is no character")
            out.append(chr(code))
            i += 2 + len(hexa[0])
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _number(text: str) -> Encoded:
    if len(text) > 400:
        raise LiteralError("a number of more than 400 characters")
    text = text.rstrip("uUlLfFdD") if not text.lower().startswith(("0x", "-0x")) \
        else text.rstrip("uUlL")
    sign = -1 if text.startswith("-") else 1
    bare = text.lstrip("+-")
    if bare.lower().startswith("0x"):
        return ["int", sign * int(bare, 16)]
    if re.fullmatch(r"\d+", bare):
        return ["int", sign * int(bare)]
    return _real(sign * float(bare))


def _real(x: float) -> Encoded:
    """A number by its value: integral ones are ints (the debuggers' text does not say)."""
    if math.isfinite(x) and x == int(x) and abs(x) < 2 ** 63 and not (x == 0 and
                                                                       math.copysign(1, x) < 0):
        return ["int", int(x)]
    return ["float", repr(x)]


class _Reader:
    def __init__(self, text: str) -> None:
        if len(text) > 1_000_000:
            raise LiteralError("value text too long")
        self.tokens: list[tuple[str, str]] = []
        position = 0
        while position < len(text):
            if _BLANK_END.match(text, position):
                break
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                raise LiteralError(f"unexpected text at {text[position:position + 20]!r}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match[kind]))
            position = match.end()
        self.at = 0
        self.items = 0
        self.closing, self.parens = _braces(self.tokens)

    def peek(self, offset: int = 0) -> tuple[str, str]:
        index = self.at + offset
        return self.tokens[index] if index < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        self.at += 1
        return token

    def expect(self, text: str) -> None:
        if self.take()[1] != text:
            raise LiteralError(f"expected {text!r}")

    def whole(self) -> Encoded:
        value = self.value(0)
        if self.peek()[0] != "end":
            raise LiteralError(f"unexpected {self.peek()[1]!r} after the value")
        return value

    def value(self, depth: int) -> Encoded:
        if depth > MAX_DEPTH:
            raise LiteralError("value nested too deeply")
        kind, text = self.take()
        if kind == "punct" and text == "(":  # a cast: (type *) 0x...
            while self.peek()[1] not in (")", ""):
                self.take()
            self.expect(")")
            return self.value(depth + 1)
        if kind == "punct" and text == "[":  # JDB's and JSON's arrays: ["a", "b"]
            return self.brackets(depth)
        if kind == "punct" and text == "{":
            if self._is_type_braces():
                return self._after_type(depth)
            return self.braces(depth)
        if kind == "angle":
            return self._angle(text)
        if kind == "string":
            return self._string(text)
        if kind == "char":
            return ["int", _char(text)]
        if kind == "number":
            return self._after_number(text)
        if kind == "word":
            return self._word(text)
        raise LiteralError(f"unexpected {text or 'end of text'!r}")

    def _is_type_braces(self) -> bool:
        """``{void (int)} 0x...``: a function pointer's type, then its address. Looked up
        in the braces matched once for the whole text: scanning to the closing brace at
        every opening one would take the text's length times its nesting."""
        end = self.closing.get(self.at - 1)
        if end is None:
            return False
        after = self.peek(end + 1 - self.at)
        return after[0] == "number" and after[1].lower().startswith("0x") \
            and self.parens[end] > self.parens[self.at]

    def _after_type(self, depth: int) -> Encoded:
        level = 1
        while level:
            text = self.take()[1]
            level += {"{": 1, "}": -1}.get(text, 0)
        return self.value(depth + 1)

    def _angle(self, text: str) -> Encoded:
        inner = text[1:-1]
        if inner == "optimized out" or inner.startswith("error"):
            raise Unreadable(f"the recorder could not read the value ({text})")
        if self.peek()[0] == "string":  # <symbol> "text": a named buffer's contents
            return self._string(self.take()[1])
        raise AddressValue(f"{text} names a place in the program, not a value")

    def _string(self, text: str) -> Encoded:
        if self.peek()[0] == "ellipsis":
            raise LiteralError("the string was cut short by the debugger")
        value = _unescape(text[1:-1])
        self.items += len(value) // 64
        return ["str", value]

    def _after_number(self, text: str) -> Encoded:
        kind, following = self.peek()
        if kind == "char":  # 65 'A': the code, then the glyph
            self.take()
            code = _number(text)
            if code[0] != "int" or code[1] != _char(following):
                raise LiteralError(f"the character {following} is not code {text}")
            return code
        if text.lower().startswith(("0x", "-0x")) and not re.search(r"[uUlL]$", text):
            if kind == "string":
                return self._string(self.take()[1])
            if kind == "angle" and not _REPEATS.fullmatch(following):
                self.take()
                return self._angle(following)
            if int(text, 16) == 0:
                return ["none"]
            raise AddressValue(f"{text} is an address")
        return _number(text)

    def _word(self, text: str) -> Encoded:
        if text in NULLS:
            return ["none"]
        if text in ("true", "false", "True", "False"):  # the latter as a Python-minded
            return ["bool", text.lower() == "true"]       # answer writes them
        lowered = text.lower().lstrip("+")
        if lowered in ("inf", "-inf", "infinity", "-infinity") or lowered.lstrip(
                "-").startswith("nan"):
            return ["float", "nan" if "nan" in lowered else repr(float(lowered))]
        raise LiteralError(f"{text!r} is a name, not a value")

    def brackets(self, depth: int) -> Encoded:
        items: list[Encoded] = []
        while self.peek()[1] != "]":
            item = self.value(depth + 1)
            self.items += _size(item)
            if self.items > MAX_ITEMS:
                raise LiteralError(f"the value has more than {MAX_ITEMS} elements")
            items.append(item)
            if self.peek()[1] == ",":
                self.take()
            elif self.peek()[1] != "]":
                raise LiteralError(f"expected ',' or ']', found {self.peek()[1] or 'the end'!r}")
        self.take()
        return ["list", items]

    def braces(self, depth: int) -> Encoded:
        fields: list[list[Encoded]] = []
        items: list[Encoded] = []
        if self.peek()[1] == "}":
            self.take()
            return ["list", []]
        while True:
            if self.peek()[0] == "word" and self.peek(1)[1] == "=":
                name = self.take()[1]
                self.take()
                fields.append([["str", name], self.value(depth + 1)])
            else:
                item = self.value(depth + 1)
                count = 1
                if self.peek()[0] == "angle" and (repeat := _REPEATS.fullmatch(
                        self.peek()[1])):
                    self.take()
                    count = int(repeat[1])
                self.items += count * _size(item)  # what the repeats expand to
                if self.items > MAX_ITEMS:
                    raise LiteralError(f"the value has more than {MAX_ITEMS} elements")
                items.extend([item] * count)
            kind, text = self.take()
            if text == "}":
                break
            if text != ",":
                raise LiteralError(f"expected ',' or '}}', found {text or 'the end'!r}")
            if self.peek()[0] == "ellipsis":
                raise LiteralError("the debugger cut the value short")
        if fields and items:
            raise LiteralError("braces mix fields and elements")
        return ["dict", fields] if fields else ["list", items]


def _char(text: str) -> int:
    body = _unescape(text[1:-1])
    if len(body) != 1:
        raise LiteralError(f"{text} is not one character")
    return ord(body)


def _braces(tokens: list[tuple[str, str]]) -> tuple[dict[int, int], list[int]]:
    """Where each ``{`` closes (an index into ``tokens``; none for one never closed), and
    how many ``(`` come before each index."""
    closing: dict[int, int] = {}
    opened: list[int] = []
    parens = [0]
    for index, (kind, text) in enumerate(tokens):
        if kind == "punct" and text == "{":
            opened.append(index)
        elif kind == "punct" and text == "}" and opened:
            closing[opened.pop()] = index
        parens.append(parens[-1] + (kind == "punct" and text == "("))
    return closing, parens


def read_text(text: str) -> Encoded:
    """The typed value a GDB or JDB text states (also how answers in C and Java are read).
    Raises ``LiteralError`` (``AddressValue``, ``Unreadable``) when it states none, and
    nothing else whatever the text (a model's answer is read with it)."""
    if not isinstance(text, str):
        raise LiteralError("the value is not a text")
    try:
        return _Reader(text.strip()).whole()
    except LiteralError:
        raise
    except (ValueError, OverflowError, RecursionError, MemoryError) as exc:
        raise LiteralError(f"not a value ({type(exc).__name__})") from None


def _size(value: Encoded) -> int:
    """The elements a value holds, nested ones counted (a repeated element's cost)."""
    if value[0] in ("list", "dict"):
        return 1 + sum(_size(part) for item in value[1]
                       for part in (item if value[0] == "dict" else [item]))
    return 1


def read_record(record: Any, depth: int = 0) -> Encoded:
    """The typed value of a GDB structured record (or plain text, or a mapping of fields).
    Parts that cannot be read stay as their published text (``["object", "unknown",
    text]``), so the value is not exact, and a question about it falls back to string
    comparison; ``AddressValue`` and ``Unreadable`` are raised only for the whole."""
    if depth > MAX_DEPTH:
        raise LiteralError("value nested too deeply")
    if isinstance(record, str):
        return read_text(record)
    if record is None:
        raise Unreadable("no value was recorded")
    if not isinstance(record, dict):
        return _opaque(record)
    category = record.get("type_category")
    if category is None:
        if set(record) == {"value"}:
            return read_record(record["value"], depth + 1)
        return ["dict", [[["str", str(name)], _part(value, depth)]
                         for name, value in record.items()]]
    value = record.get("value")
    if record.get("concrete_type") == "NULL":
        return ["none"]
    if category == "pointer":
        if value is None:
            raise AddressValue("a pointer whose target was not recorded")
        return read_record(value, depth + 1)
    if category == "struct" and isinstance(value, dict):
        return ["dict", [[["str", str(name)], _part(field, depth)]
                         for name, field in value.items()]]
    if category == "array" and isinstance(value, list):
        return ["list", [_part(item, depth) for item in value[:MAX_ITEMS]]]
    if category == "error" or "error_type" in record:
        raise Unreadable(f"the recorder could not read the value ({record.get('error_type')})")
    return read_record(value, depth + 1)


def _part(record: Any, depth: int) -> Encoded:
    """A part of a value; one that does not read is kept as its text when it is a text,
    else said to be unreadable (the recorder's own records hold addresses and stack
    traces, which a prompt must not show)."""
    try:
        return read_record(record, depth + 1)
    except AddressValue:
        return ["object", "unknown", AN_ADDRESS]
    except Unreadable:
        return _opaque(None)
    except LiteralError:
        return _opaque(record)


def _opaque(record: Any) -> Encoded:
    return ["object", "unknown", record if isinstance(record, str) else NOT_RECORDED]


_JAVA_PLAIN = frozenset({"string", "stringbuffer", "stringbuilder", "charsequence", "char",
                         "character", "boolean", "byte", "short", "int", "integer", "long",
                         "float", "double", "bigdecimal", "biginteger", "arraylist", "list"})
"""Java types whose JDB text is a value; any other is an object reference."""


def read_java(text: Any, type_name: str) -> Encoded:
    """A JDB value of the named Java type. Strings (``java.lang.String``, ``StringBuilder``
    and the like) are published bare, or quoted as JDB prints them; other values as
    literals, as text or as JSON; an object of any other class is a reference whose text
    (``com.example.Contract@1``) is no value, kept opaque."""
    if text is None:
        return ["none"]
    if type(text) is bool:
        return ["bool", text]
    if type(text) in (int, float):
        return _real(float(text)) if type(text) is float else ["int", text]
    if not isinstance(text, str):
        raise LiteralError("the value is not a text")
    simple = type_name.rsplit(".", 1)[-1].lower()
    if simple.rstrip("[]") not in _JAVA_PLAIN:
        return ["object", type_name, text]  # a reference: its text is no value
    if simple in ("string", "stringbuffer", "stringbuilder", "charsequence"):
        if len(text) >= 2 and text[0] == text[-1] == '"':
            return ["str", text[1:-1]]
        return ["str", text]
    if simple in ("char", "character") and len(text) == 1:
        return ["int", ord(text)]
    value = read_text(text)
    if simple in ("boolean",) and value[0] != "bool":
        raise LiteralError(f"{text!r} is not a boolean")
    return value


# --------------------------------------------------------------------------- showing


def show(value: Encoded, language: str) -> str:
    """A typed value written the way the language's debugger shows it (without addresses);
    an opaque part is its published text."""
    tag = value[0]
    if tag == "none":
        return "NULL" if language == "c" else "null"
    if tag == "bool":
        return "true" if value[1] else "false"
    if tag == "int":
        return str(value[1])
    if tag == "float":
        return value[1]
    if tag == "str":
        return _quoted(value[1])
    if tag in ("list", "tuple", "set", "frozenset"):
        return "{" + ", ".join(show(item, language) for item in value[1]) + "}"
    if tag == "dict":
        return "{" + ", ".join(f"{key[1] if key[0] == 'str' else show(key, language)} = "
                               f"{show(item, language)}" for key, item in value[1]) + "}"
    return str(value[-1])


def _quoted(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
