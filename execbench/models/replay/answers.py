"""Reading an answers file: which answers it holds, for which ids, in sample order.

Three shapes are read (``SHAPES``), told apart by the first line unless named:

* ``jsonl``: lines ``{"instance_id": ..., "response": ...}``; several lines for one id are
  its samples 0, 1, ... in file order. Other keys are ignored.
* ``cruxeval``: CRUXEval's ``generations.json``, one JSON object mapping a record id
  (``sample_12``) to the list of that record's generations.
* ``lm-eval``: the JSONL that ``lm-eval --log_samples`` writes, one line per document:
  its ``doc`` (whose ``id`` names the record), ``resps`` (one request's generations) and
  ``filter``. A document is written once per filter of its task, with the same raw
  ``resps`` each time: the lines of the first filter are read, the others passed over and
  counted. ``filtered_resps`` are not read (for CRUXEval they are test code, not answers).

The file is someone else's: every line is checked before anything is asked of it, and
the first bad one refuses the whole file with ``file:line`` and the reason (not UTF-8,
invalid JSON, a key twice in one object, a value of the wrong JSON type, an empty id, a
line over ``MAX_LINE_BYTES``). Only regular files are read (a FIFO would block, a device
never end). Ids are only ever compared with instance ids, never used as paths.

Memory does not grow with the responses: the JSONL shapes are indexed (where each
answer's line starts and how long it is) and a line is read again when its answer is
asked for; a ``generations.json`` is one JSON document, read whole, up to
``MAX_DOCUMENT_BYTES``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from execbench.models.base import ModelError
from execbench.safe_read import NOT_A_FILE
from execbench.text_safety import visible

JSONL, CRUXEVAL, LM_EVAL = "jsonl", "cruxeval", "lm-eval"
SHAPES = (JSONL, CRUXEVAL, LM_EVAL)

MAX_LINE_BYTES = 16 << 20
"""Bytes of one line of a JSONL shape: an lm-eval line holds the prompt, the document and
every repeat's reply, so it is allowed four times a dataset record's bound."""
MAX_DOCUMENT_BYTES = 256 << 20
"""Bytes of a ``generations.json`` (CRUXEval's own files are under a megabyte)."""
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"

Location = tuple[int, int, int]
"""Where one answer of a JSONL shape is: its line's offset and length in bytes, and its
place among the line's responses."""


class AnswersError(ModelError):
    """An answers file that cannot be used; the message is one line naming the file and,
    where there is one, the line."""


class _Bad(ValueError):
    """What is wrong with one line (or value); raised up to where the line is known."""


def shown(text: str) -> str:
    """An id or file name as a message shows it: one line, no control characters."""
    return visible(text, lines=False)


class Answers(ABC):
    """The answers of one file, by id; each id's answers in sample order."""

    def __init__(self, path: Path, shape: str, digest: str) -> None:
        self.path = path
        self.shape = shape
        self.sha256 = digest
        self.passed_over = 0
        """Lines of other lm-eval filters, holding the same responses, that were not read."""

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """How many answers each id has."""

    @abstractmethod
    def response(self, key: str, sample: int) -> str:
        """The ``sample``-th answer for ``key`` (one ``counts`` says is there)."""

    def open(self) -> None:
        """Get ready to read answers again (the JSONL shapes open the file)."""
        return None

    def close(self) -> None:
        """Let go of what ``open`` took."""
        return None


class InMemory(Answers):
    """A ``generations.json``: its answers as read."""

    def __init__(self, path: Path, digest: str, answers: dict[str, list[str]]) -> None:
        super().__init__(path, CRUXEVAL, digest)
        self.answers = answers

    def counts(self) -> dict[str, int]:
        return {key: len(texts) for key, texts in self.answers.items()}

    def response(self, key: str, sample: int) -> str:
        return self.answers[key][sample]


class Indexed(Answers):
    """A JSONL shape: where each answer is, read again from the file when asked for."""

    def __init__(self, path: Path, shape: str, digest: str, identity: tuple[int, ...],
                 where: dict[str, list[Location]]) -> None:
        super().__init__(path, shape, digest)
        self.identity = identity
        """The file's device, inode, size and modification time when it was indexed."""
        self.where = where
        self.fd = -1

    def counts(self) -> dict[str, int]:
        return {key: len(places) for key, places in self.where.items()}

    def open(self) -> None:
        """Open the file again, refusing it if it changed since it was indexed."""
        self.close()
        try:
            fd = _open_regular(self.path)
        except OSError as exc:
            raise AnswersError(f"cannot read the answers file {shown(str(self.path))} "
                               f"again: {exc.strerror or exc}") from None
        if _identity(os.fstat(fd)) != self.identity:
            os.close(fd)
            raise AnswersError(f"{shown(str(self.path))} changed since it was read; "
                               "run the command again")
        self.fd = fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def response(self, key: str, sample: int) -> str:
        offset, length, place = self.where[key][sample]
        if self.fd < 0:
            self.open()
        try:
            raw = os.pread(self.fd, length, offset)
        except OSError as exc:
            raise AnswersError(f"cannot read {shown(str(self.path))}: {exc}") from None
        try:
            found = _LINES[self.shape](parse(raw))
        except _Bad:
            found = None
        if found is None or found[0] != key or len(raw) != length:
            raise AnswersError(f"{shown(str(self.path))} changed while the run read it")
        return found[1][place]


def read_answers(path: Path, shape: str | None) -> Answers:
    """The answers in ``path``, in ``shape`` (None: told from the first line); raises
    ``AnswersError`` for a file that cannot be read whole."""
    name = shown(str(path))
    try:
        fd = _open_regular(path)
    except OSError as exc:
        raise AnswersError(f"cannot read the answers file {name}: "
                           f"{exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        if handle.read(2) == _GZIP_MAGIC:
            raise AnswersError(f"{name} is gzip-compressed: decompress it first "
                               f"(gunzip -k {name})")
        handle.seek(0)
        if shape is None:
            shape = _detect(handle, name)
            handle.seek(0)
        if shape == CRUXEVAL:
            return _read_document(handle, path, name)
        return _index(handle, path, name, shape, _identity(os.fstat(handle.fileno())))


def _open_regular(path: Path) -> int:
    """A descriptor of ``path``, refused (``OSError``) unless it is a regular file;
    opened without blocking, so a FIFO with no writer cannot hang the run."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, NOT_A_FILE)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _identity(found: os.stat_result) -> tuple[int, ...]:
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


def _lines(handle: IO[bytes], name: str, digest: Any) -> Iterator[tuple[int, int, bytes]]:
    """Each non-blank line with its number and the offset of its first byte (past a
    byte-order mark that opens the file), fed to ``digest`` on the way; a line over
    ``MAX_LINE_BYTES`` refuses the file before more than that is held."""
    offset = 0
    lineno = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        lineno += 1
        if len(raw) > MAX_LINE_BYTES:
            raise AnswersError(f"{name}:{lineno}: a line over {MAX_LINE_BYTES:,} bytes")
        digest.update(raw)
        skip = len(_BOM) if lineno == 1 and raw.startswith(_BOM) else 0
        if raw.strip():
            yield lineno, offset + skip, raw[skip:]
        offset += len(raw)


def parse(raw: bytes, document: bool = False) -> Any:
    """One JSON value from someone else's bytes; ``_Bad`` says what is wrong with it, and
    where (a ``document`` of many lines by line and column, a line by column)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Bad(f"not UTF-8 text (byte {exc.start + 1})") from None
    try:
        return json.loads(text, object_pairs_hook=_unique)
    except _Bad:
        raise
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}" if document else f"column {exc.colno}"
        raise _Bad(f"invalid JSON: {exc.msg} ({where})") from None
    except RecursionError:
        raise _Bad("invalid JSON: nested too deeply") from None
    except ValueError as exc:  # an integer over Python's digit limit
        raise _Bad(f"invalid JSON: {exc}") from None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different: ``json`` would keep the last of two
    silently, and which answer counts must not depend on that."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Bad(f"the key {shown(repr(key))} appears twice in one object")
        found[key] = value
    return found


def _kind(value: Any) -> str:
    """A JSON value's type in JSON's words."""
    if isinstance(value, bool) or value is None:
        return "true/false" if value is not None else "null"
    return {str: "a string", int: "a number", float: "a number", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


def _text(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    if key not in record:
        raise _Bad(f"no {key!r} (keys: {shown(', '.join(sorted(record))) or 'none'})")
    if not isinstance(value, str):
        raise _Bad(f"{key!r} is {_kind(value)}, not a string")
    return value


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"{what} is {_kind(value)}, not a JSON object")
    return value


def _jsonl_line(value: Any) -> tuple[str, list[str], None]:
    """The id and the one response of a JSONL answers line."""
    record = _object(value, "the line")
    key = _text(record, "instance_id")
    if not key:
        raise _Bad("'instance_id' is empty")
    return key, [_text(record, "response")], None


DOC_IDS = ("instance_id", "id")
"""The keys of an lm-eval document that name it, in the order they are looked for:
lm-eval's CRUXEval tasks carry the dataset's ``id`` (``sample_12``)."""


def _lm_eval_line(value: Any) -> tuple[str, list[str], str | None]:
    """The document id, the generations and the filter of an lm-eval sample line."""
    record = _object(value, "the line")
    doc = _object(record.get("doc"), "'doc'")
    found = next((key for key in DOC_IDS if key in doc), None)
    if found is None:
        raise _Bad(f"its doc has no {' or '.join(map(repr, DOC_IDS))} to match an instance "
                   f"by (doc keys: {shown(', '.join(sorted(doc))) or 'none'}); lm-eval samples "
                   "are matched by their document's id, as lm-eval's CRUXEval tasks give")
    key = doc[found]
    if isinstance(key, int) and not isinstance(key, bool):  # MBPP's ids are numbers
        key = str(key)
    if not isinstance(key, str):
        raise _Bad(f"the doc's {found!r} is {_kind(key)}, not an id")
    if not key:
        raise _Bad(f"the doc's {found!r} is empty")
    resps = record.get("resps")
    if "resps" not in record:
        raise _Bad("no 'resps' (the generations)")
    if not isinstance(resps, list) or len(resps) != 1 or not isinstance(resps[0], list):
        what = f"{len(resps)} requests" if isinstance(resps, list) else _kind(resps)
        raise _Bad(f"'resps' holds {what}, not one request's generations: only a "
                   "generation task (one request per document) can be replayed")
    for place, text in enumerate(resps[0]):
        if not isinstance(text, str):
            raise _Bad(f"generation {place + 1} in 'resps' is {_kind(text)}, not a string")
    kept = record.get("filter")
    if kept is not None and not isinstance(kept, str):
        raise _Bad(f"'filter' is {_kind(kept)}, not a string")
    return key, resps[0], kept


_LINES = {JSONL: _jsonl_line, LM_EVAL: _lm_eval_line}


def _index(handle: IO[bytes], path: Path, name: str, shape: str,
           identity: tuple[int, ...]) -> Indexed:
    """Every line checked, and where each answer is."""
    digest = hashlib.sha256()
    where: dict[str, list[Location]] = {}
    first_line: dict[str, int] = {}
    first_filter: str | None = None
    passed_over = 0
    for lineno, offset, raw in _lines(handle, name, digest):
        try:
            key, texts, kept = _LINES[shape](parse(raw))
        except _Bad as exc:
            raise AnswersError(f"{name}:{lineno}: {exc}") from None
        if shape == LM_EVAL:
            if not first_line:
                first_filter = kept
            if kept != first_filter:
                passed_over += 1
                continue
            if key in first_line:
                raise AnswersError(f"{name}:{lineno}: a second line for the document "
                                   f"{shown(key)} (the first is line {first_line[key]}); "
                                   "lm-eval writes one line per document and filter")
        first_line.setdefault(key, lineno)
        places = where.setdefault(key, [])
        places.extend((offset, len(raw), place) for place in range(len(texts)))
    if not first_line:
        raise AnswersError(f"{name} holds no answers")
    answers = Indexed(path, shape, digest.hexdigest(), identity, where)
    answers.passed_over = passed_over
    return answers


def _read_document(handle: IO[bytes], path: Path, name: str) -> InMemory:
    """A ``generations.json`` read whole and checked: an object of lists of strings."""
    raw = handle.read(MAX_DOCUMENT_BYTES + 1)
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise AnswersError(f"{name} is over {MAX_DOCUMENT_BYTES:,} bytes, the bound on a "
                           "generations.json")
    try:
        value = parse(raw[len(_BOM):] if raw.startswith(_BOM) else raw, document=True)
    except _Bad as exc:
        raise AnswersError(f"{name}: {exc}") from None
    if not isinstance(value, dict):
        raise AnswersError(f"{name}: a generations.json is one JSON object mapping ids to "
                           f"lists of generations, not {_kind(value)}")
    for key, texts in value.items():
        if not key:
            raise AnswersError(f"{name}: an id is empty")
        if not isinstance(texts, list):
            raise AnswersError(f"{name}: {shown(key)} maps to {_kind(texts)}, not a list of "
                               "generations")
        for place, text in enumerate(texts):
            if not isinstance(text, str):
                raise AnswersError(f"{name}: generation {place + 1} of {shown(key)} is "
                                   f"{_kind(text)}, not a string")
    if not value:
        raise AnswersError(f"{name} holds no answers")
    return InMemory(path, hashlib.sha256(raw).hexdigest(), value)


def _detect(handle: IO[bytes], name: str) -> str:
    """The shape the first non-blank line says: a JSONL answers line has ``instance_id``,
    an lm-eval sample ``doc`` and ``resps``; a ``generations.json`` opens an object over
    several lines, or is one line of an object of lists."""
    first = next(_lines(handle, name, hashlib.sha256()), None)
    if first is None:
        raise AnswersError(f"{name} holds no answers")
    raw = first[2]
    try:  # only the keys matter here: what is wrong with the line is said when it is read
        value = json.loads(raw)
    except (ValueError, RecursionError):
        value = None
        if raw.lstrip().startswith(b"{"):
            return CRUXEVAL
    if isinstance(value, dict):
        if "instance_id" in value:
            return JSONL
        if "doc" in value or "resps" in value:
            return LM_EVAL
        if value and all(isinstance(texts, list) for texts in value.values()):
            return CRUXEVAL
    raise AnswersError(f"cannot tell the shape of {name} from its first line (a JSONL "
                       "answers line has instance_id and response, an lm-eval sample doc and "
                       "resps, a CRUXEval generations.json maps ids to lists); name it with "
                       f"-M format={'|'.join(SHAPES)}")
