"""The C recorder: a script GDB runs (``gdb -x``) around a project's test command.

Standard library and GDB's own ``gdb`` module only: it runs in GDB's Python, inside the
harvest jail, beside the tests. It writes the raw recording (``recording``) on the channel
whose descriptor the config names, never on anything the tests can inherit (the
descriptor is made close-on-exec before the first process starts).

How it records. GDB follows every process the test command starts (``detach-on-fork off``,
all of them resumed together, ``catch exec`` stopping each new program once). When a
program under the project's copy is loaded, each function whose source file the driver
listed gets a breakpoint on its name (GDB places it after the prologue, in every program
that holds the function). A stop at that breakpoint, in a frame that is not the thread's
innermost recorded call, is a new call, its arguments read there; the call is then stepped
line by line with ``next`` (a project function it calls stops at its own breakpoint and is
recorded the same way); a stop at the function's last line (the closing brace, where every
local holds its final value) ends it, and a breakpoint at its return address
(``gdb.FinishBreakpoint``, for that frame and thread) gives its return value. That
breakpoint stays armed across other stops, so a return that races another process's
``exec`` or breakpoint is still recorded (GDB's ``finish`` command, once such a stop cut it
short, lost the return and the call). A thread whose step another process's stop cut short
is taken up again where it stopped before anything is resumed with ``continue``; but a
``next`` for one thread lets the others run freely, so a call another thread was stepping
is dropped then (``_unobserved``): a call is kept whole or not at all. Consecutive stops at
one line of one call are one line event (a ``for`` header's parts). A call whose frame is
gone without reaching its last line (``exit``) gets no return record, and the parent drops
it; a thread that calls ``longjmp`` or switches context drops all its calls then
(``JUMPS``). A function whose ``max_calls_seen`` calls have been recorded has its
breakpoint disabled.

Why ``next`` and not a breakpoint at every line address (one trap per line rather than a
few single steps), measured on cJSON 1.7.15's ``test.c`` program built ``-g -O0``, GDB
13.1, stops only (no values read), one quiet run each: a breakpoint at each of the 1,801
line addresses of ``cJSON.c`` (``breakpoint always-inserted on``; with it off GDB
re-inserts every breakpoint at each stop and the run passed 200 s) took 68.18 s for 40,221
stops; a breakpoint per function and ``next`` took 27.11 s for 27,287 stops. Address
breakpoints also cannot be set when a position-independent program is loaded (GDB has not
relocated it yet, and fails with "Cannot access memory") and belong to one program only; a
breakpoint on a function name has neither problem.

Values are read from GDB's ``Value`` objects, never from its printed text, except a
floating-point number's digits (``str``), which the parent re-reads. A local is shown
once it holds a value the program gave it: once the call has run its declaration line,
where that line gives it one (``int n = 0;``), and otherwise once the call has run a later
line that names it (``n = 0;``, ``scanf("%d", &n)``, ``memset(buf, ...)``). Before that its
memory holds whatever was there: stack garbage that differs between machines, environments
and the calls that ran before, which would be a wrong value to ask about and, for pointers,
a wrong aliasing truth (``Function.given``). A pointer's target is shown in its place (a
``char *`` as its string) and its address becomes a token per call, ``a1``, ``a2``..., by
first appearance.
"""

import contextlib
import json
import os
import re
from typing import Any

import gdb  # type: ignore[import-not-found, import-untyped, unused-ignore]  # GDB's own

with open(os.environ["EXECBENCH_RECORDER_CONFIG"], encoding="utf-8") as _config:
    CONFIG = json.load(_config)
ROOT = CONFIG["root"].rstrip("/") + "/"
FILES = set(CONFIG["files"])
"""The project's source files the recorder may record functions of, relative to ROOT."""
MAX_NODES = CONFIG["max_value_nodes"]
MAX_DEPTH = CONFIG["max_depth"]
MAX_EVENTS = CONFIG["max_events"]
MAX_CALLS = CONFIG["max_calls_seen"]
MAX_STRING = 200
MAX_FAILURES = 100
"""GDB commands failing in a row before the recorder gives up on the run."""
CHAR_NAMES = ("char", "signed char", "unsigned char")
AGGREGATES = (gdb.TYPE_CODE_ARRAY, gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION)
FILL = 0xA5
"""The byte heap memory holds until the program writes it: the tests run with
``MALLOC_PERTURB_`` set so that ``malloc`` fills each block with it (``native.c.FILL``).
The recorder never writes to the tests' memory (filling the stack too was tried: a loop
first in a function's body, going round in a forked child or a coroutine, was taken for a
call that begins and its live locals were overwritten).
A value made only of it (a number, a pointer), a string holding four of it in a row, or
only it, is one the program never wrote: shown as not recorded, so neither a value nor an
address in an aliasing question comes from leftovers."""
NOT_RECORDED = "<not recorded>"
AN_ADDRESS = "<an address>"
"""The texts of a value that could not be read, and of one whose only content is an address:
those ``sources.debugger_values.PLACEHOLDERS`` names (this script cannot import it; a test
checks they agree), which are never made a truth."""

_out = os.fdopen(CONFIG["records_fd"], "w", buffering=1 << 16, encoding="utf-8")
os.set_inheritable(CONFIG["records_fd"], False)


def emit(record):
    _out.write(json.dumps(record, separators=(",", ":")) + "\n")


# --------------------------------------------------------------------------- values


class Budget:
    def __init__(self):
        self.nodes = MAX_NODES


def _cstring(address, limit=MAX_STRING):
    try:
        data = bytes(gdb.selected_inferior().read_memory(address, limit))
    except gdb.MemoryError:
        return None
    return _text(data)


def _text(data):
    """The C string at the start of ``data``; None if it has no end there, or if it is
    heap memory the program has not written."""
    end = data.find(b"\0")
    if end < 0:
        return None  # longer than the bound: not a whole value
    if _FILLED in data[:end] or (end and data[:end].count(FILL) == end):
        return None  # heap memory the program has not written
    return data[:end].decode("latin-1")


_FILLED = bytes([FILL]) * 4


def _unwritten(number, size):
    """Whether ``number`` (as ``size`` bytes) is the heap's fill, ``FILL`` in every byte."""
    return size > 0 and number & ((1 << 8 * size) - 1) == int.from_bytes(bytes([FILL]) * size,
                                                                          "little")


def encode(value, budget, depth=0, in_memory=True):
    """The typed value of a GDB value, within the node and depth bounds. ``in_memory``
    False: a value GDB holds itself (a struct a call returned), never to be asked for its
    address: for an array GDB would first copy it into the tests' memory, calling their
    ``malloc`` and leaving a breakpoint of its own on their stack."""
    budget.nodes -= 1
    if budget.nodes < 0 or depth > MAX_DEPTH:
        return ["truncated", "..."]
    try:
        kind = value.type.strip_typedefs()
        code = kind.code
        if code in (gdb.TYPE_CODE_BOOL, gdb.TYPE_CODE_INT, gdb.TYPE_CODE_CHAR,
                    gdb.TYPE_CODE_ENUM):
            number = int(value)
            if _unwritten(number, kind.sizeof):
                return ["object", "unknown", NOT_RECORDED]
            return ["bool", bool(number)] if code == gdb.TYPE_CODE_BOOL else ["int", number]
        if code == gdb.TYPE_CODE_FLT:
            if in_memory and value.address is not None and _unwritten(int.from_bytes(bytes(
                    gdb.selected_inferior().read_memory(value.address, kind.sizeof)),
                    "little"), kind.sizeof):
                return ["object", "unknown", NOT_RECORDED]
            return ["float", str(value)]
        if code == gdb.TYPE_CODE_PTR:
            return _pointer(value, kind, budget, depth)
        if code == gdb.TYPE_CODE_ARRAY:
            return _array(value, kind, budget, depth, in_memory)
        if code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
            return ["dict", [[["str", field.name],
                              _field(value, field, budget, depth, in_memory)]
                             for field in kind.fields() if field.name]]
    except gdb.error:
        return ["object", "unknown", NOT_RECORDED]
    return ["object", "unknown", AN_ADDRESS]


def _field(value, field, budget, depth, in_memory):
    """A struct's field; a bit-field whose bits are the fill's at its place (``FILL``) is
    one the program has not written (a whole-byte check would miss it: its neighbours in
    the byte may be written), and is shown as not recorded."""
    part = value[field]
    if field.bitsize:
        pattern = int.from_bytes(bytes([FILL]) * 9, "little") >> field.bitpos % 8
        if int(part) & ((1 << field.bitsize) - 1) == pattern & ((1 << field.bitsize) - 1):
            budget.nodes -= 1
            return ["object", "unknown", NOT_RECORDED]
    return encode(part, budget, depth + 1, in_memory)


def _pointer(value, kind, budget, depth):
    address = int(value)
    if address == 0:
        return ["none"]
    if _unwritten(address, kind.sizeof):
        return ["object", "unknown", NOT_RECORDED]
    target = kind.target().strip_typedefs()
    if target.code == gdb.TYPE_CODE_FUNC or target.code == gdb.TYPE_CODE_VOID:
        return ["object", "unknown", AN_ADDRESS]
    if target.name in CHAR_NAMES:
        text = _cstring(address)
        return ["str", text] if text is not None else ["object", "unknown", NOT_RECORDED]
    try:
        return encode(value.dereference(), budget, depth + 1)
    except gdb.MemoryError:
        return ["object", "unknown", NOT_RECORDED]


def _array(value, kind, budget, depth, in_memory):
    low, high = kind.range()
    element = kind.target().strip_typedefs()
    if element.name in CHAR_NAMES:
        if not in_memory:
            text = _text(bytes(int(value[index]) & 0xFF
                               for index in range(low, min(high, low + MAX_STRING) + 1)))
        elif value.address is not None:
            text = _cstring(int(value.address), high - low + 1)
        else:
            text = None
        if text is not None:
            return ["str", text]
    items = []
    for index in range(low, high + 1):
        if budget.nodes <= 0:
            items.append(["truncated", "..."])
            break
        items.append(encode(value[index], budget, depth + 1, in_memory))
    return ["list", items]


# --------------------------------------------------------------------------- functions


class Function:
    """A project function as one program holds it: its id, lines and declarations."""

    def __init__(self, symbol, relative):
        self.name = symbol.name
        self.id = relative + ":" + symbol.name
        self.file = relative
        self.first = symbol.line
        self.last = None
        self.code_lines = set()
        self.text = {}
        """Its lines' text, comments and literals blanked, by line number (``measure``)."""
        self.valued = {}
        """Per local (name, declaration line, whether an aggregate): the lines that give it a
        value (``given``)."""
        self.seen = 0
        self.active = 0
        self.breakpoint = gdb.Breakpoint(source=symbol.symtab.fullname(),
                                         function=symbol.name, internal=True)

    def starts_at(self, pc):
        """Whether ``pc`` is where its breakpoint stops a call, in any program holding it."""
        return any(location.address == pc for location in self.breakpoint.locations)

    def measure(self, frame):
        """Its lines, from the line table, once a program holding it runs (the addresses
        are relocated by then)."""
        block = _body(frame)
        symtab = frame.find_sal().symtab
        self.code_lines = {entry.line for entry in symtab.linetable()
                           if block.start <= entry.pc < block.end and entry.line > 0}
        self.last = max(self.code_lines, default=self.first)
        lines = _blanked(symtab.fullname())
        self.text = {number: lines[number - 1] for number in range(self.first, self.last + 1)
                     if number <= len(lines)}

    def given(self, name, declared, whole):
        """The lines after whose run the local ``name`` declared at line ``declared`` holds
        a value the program gave it: the declaration line if it initialises the local
        there (the line has code, and the name is followed by ``=``, or by ``[...]`` and
        ``=``), and every later line of the function that names it; for an array, struct
        or union (``whole``), only a line naming it whole (``memset(buf, ...)``,
        ``p = q;``, ``return r;``), not one of its elements or fields (``buf[i] = c;``
        leaves the others as they were). Naming is not proof of a write (``if (n > 0)``
        reads), but a program that reads a local before giving it a value has undefined
        behaviour anyway; a local no line names so (set element by element, or by a macro
        that hides its name) is never shown, which loses it rather than shows leftovers,
        which differ between runs (a stack canary is random)."""
        key = (name, declared, whole)
        if key not in self.valued:
            word = r"(?<![\w.])(?<!->)" + re.escape(name) + r"(?![\w])"
            named = re.compile(word + (r"(?!\s*(?:\[|\.|->))" if whole else ""))
            initialised = re.compile(word + r"\s*(?:\[[^\]]*\]\s*)*=(?!=)")
            self.valued[key] = frozenset(
                number for number, text in self.text.items()
                if (number > declared and named.search(text)) or (
                    number == declared and number in self.code_lines
                    and initialised.search(text)))
        return self.valued[key]


_NOT_CODE = re.compile(r"//(?:\\\n|[^\n])*|/\*(?:[^*]|\*(?!/))*(?:\*/|\Z)"
                       r"|\"(?:\\[\s\S]|[^\"\\\n])*(?:\"|\\?$)"
                       r"|'(?:\\[\s\S]|[^'\\\n])*(?:'|\\?$)", re.M)
"""A comment, string or character literal, a backslash-newline inside one continuing it
(C joins such lines first). Each alternative matches wherever it starts: a literal left
open ends at its line's end, a comment at the file's; so no start is tried twice, and a
file is blanked in one pass, in time linear in its size, whatever a hostile project
writes."""
BLANKED: dict[str, list[str]] = {}
"""Per source file, its lines with comments, strings and characters blanked (kept for the
run: each file is read once)."""


def _blanked(path):
    if path not in BLANKED:
        try:
            with open(path, encoding="utf-8", errors="replace") as source:
                text = source.read()
        except OSError:
            text = ""
        code = _NOT_CODE.sub(lambda found: re.sub(r"[^\n]", " ", found.group()), text)
        BLANKED[path] = code.split("\n")
    return BLANKED[path]


def _body(frame):
    """The block of the whole function ``frame`` runs (its innermost may be a nested one)."""
    block = frame.block()
    while block.function is None:
        block = block.superblock
    return block


FUNCTIONS: dict[tuple[str, str], Function] = {}
"""By (source file, function name): the project's functions, each with its breakpoint
(one for every program that holds it: GDB places it in each, after relocation)."""


def _relative(path):
    real = os.path.realpath(path)
    return real[len(ROOT):] if real.startswith(ROOT) else None


def _function_names():
    """The functions with debug information, by name: GDB's ``info functions`` lists them
    (the only listing its Python API gives); which file each is in is asked of its symbol."""
    text = gdb.execute("info functions -n", to_string=True)
    names = set()
    for line in text.splitlines():
        head = line.split(":", 1)[1].split("(", 1)[0] if ":" in line and "(" in line else ""
        name = head.replace("*", " ").split()[-1] if head.strip() else ""
        if name.isidentifier():
            names.add(name)
    return sorted(names)


PENDING: list[Any] = []
"""Programs of the project's copy loaded since the last stop: their breakpoints wait for
that stop (``catch exec`` makes one), when their addresses are relocated."""


def on_new_objfile(event):
    if _relative(event.new_objfile.filename) is not None:
        PENDING.append(event.new_objfile)


def install():
    """Breakpoints for the functions of the programs loaded since the last stop."""
    while PENDING:
        objfile = PENDING.pop()
        if not objfile.is_valid():
            continue
        for name in _function_names():
            for symbol in _symbols(objfile, name):
                relative = _relative(symbol.symtab.fullname())
                key = (relative, name)
                if relative in FILES and name != "main" and key not in FUNCTIONS:
                    FUNCTIONS[key] = Function(symbol, relative)


def _symbols(objfile, name):
    found = []
    for lookup in (objfile.lookup_global_symbol, objfile.lookup_static_symbol):
        symbol = lookup(name)
        if symbol is not None and symbol.is_function and symbol.symtab is not None:
            found.append(symbol)
    return found


# --------------------------------------------------------------------------- calls


class Call:
    def __init__(self, number, function, frame):
        self.number = number
        self.function = function
        self.frame = frame
        self.tokens = {}
        self.ran = set()
        self.events = 0
        self.last_line = None
        self.arguments = []
        self.final = None
        self.returning = None

    def token(self, address):
        if address not in self.tokens:
            self.tokens[address] = "a" + str(len(self.tokens) + 1)
        return self.tokens[address]

    def variables(self, frame, arguments_only=False):
        """[name, value, token] of the arguments and the locals given a value by now."""
        try:
            block = frame.block()
        except RuntimeError:
            return []
        seen, found = set(), []
        while block is not None:
            for symbol in block:
                if symbol.name in seen or not (symbol.is_argument or symbol.is_variable):
                    continue
                seen.add(symbol.name)  # shown or not, it hides an outer one of its name
                if symbol.addr_class == gdb.SYMBOL_LOC_STATIC:
                    continue
                if not symbol.is_argument and (arguments_only or not self._given(symbol)):
                    continue
                found.append(self._variable(symbol, frame))
            if block.function is not None:
                break
            block = block.superblock
        arguments = [item for item in found if item[0] in self.arguments]
        return sorted(arguments, key=lambda item: self.arguments.index(item[0])) + \
            sorted((item for item in found if item[0] not in self.arguments),
                   key=lambda item: item[0])

    def _given(self, symbol):
        """Whether a local holds a value the program gave it, by the lines run so far."""
        whole = symbol.type.strip_typedefs().code in AGGREGATES
        return not self.ran.isdisjoint(self.function.given(symbol.name, symbol.line, whole))

    def _variable(self, symbol, frame):
        try:
            value = symbol.value(frame)
        except (gdb.error, RuntimeError):
            return [symbol.name, ["object", "unknown", NOT_RECORDED], None]
        token = None
        kind = value.type.strip_typedefs()
        if kind.code == gdb.TYPE_CODE_PTR and int(value) != 0 \
                and not _unwritten(int(value), kind.sizeof):
            token = self.token(int(value))
        return [symbol.name, encode(value, Budget()), token]


STACKS: dict[tuple[int, int], list[Any]] = {}
"""Per thread (inferior, thread number): the recorded calls still running, innermost last."""
COUNTER = [0]


def _argument_names(frame):
    names = []
    block = frame.block()
    while block is not None:
        for symbol in block:
            if symbol.is_argument and symbol.name not in names:
                names.append(symbol.name)
        if block.function is not None:
            break
        block = block.superblock
    return names


def _function_at(frame):
    try:
        symbol = frame.function()
    except (gdb.error, RuntimeError):
        return None
    if symbol is None or symbol.symtab is None:
        return None
    return FUNCTIONS.get((_relative(symbol.symtab.fullname()), symbol.name))


JUMPS = frozenset({"longjmp", "_longjmp", "siglongjmp", "__longjmp_chk",
                   "__libc_longjmp", "__libc_siglongjmp", "____longjmp_chk",
                   "setcontext", "__setcontext", "swapcontext", "__swapcontext"})
"""The C library's ways to leave frames without returning (``longjmp``, and the context
switches coroutines are made of): each has a breakpoint. GDB's ``next`` cannot follow such
a jump and runs on to the next breakpoint, and a call of the same function with the same
caller and stack then has the left call's frame id: so a thread that calls one of these
drops its calls. (A context switch written by hand, in assembly, is not seen.)"""


def on_stop():
    """Record what the stop shows; the command that resumes the run from it."""
    try:
        frame = gdb.selected_frame()
        thread = gdb.selected_thread()
    except gdb.error:
        return "continue"
    key = (thread.inferior.num, thread.num)
    stack = STACKS.setdefault(key, [])
    if stack and frame.name() in JUMPS:
        _drop(key, stack)  # where the jump lands is not known: none of its calls is whole
        return "continue"
    while stack and not stack[-1].frame.is_valid():
        gone = stack.pop()
        if gone.returning is not None and gone.returning.reached:
            return _returned(gone, stack)
        # else it left without reaching its last line (longjmp, exit): no return record
    call = stack[-1] if stack else None
    if call is not None and call.frame == frame:
        return _step(call, frame, stack)
    function = _function_at(frame)
    if function is None or not function.starts_at(frame.pc()) or not _entered(frame, key):
        # Not where a call is first seen (after its prologue, at its breakpoint), or maybe
        # a dropped call's loop going round (``_entered``): a step of this thread cut short
        # elsewhere (in a library, or in a callee's prologue, before its arguments are
        # stored) goes back to its call; a call on its way out has its return breakpoint;
        # anything else (the rest of a call dropped, a signal handler returning into it)
        # is not recorded.
        return "next" if call is not None and call.returning is None else "continue"
    if function.last is None:
        function.measure(frame)
    call = Call(None, function, frame)
    if function.seen < MAX_CALLS:
        function.seen += 1
        COUNTER[0] += 1
        call.number = COUNTER[0]
        call.arguments = _argument_names(frame)
        emit({"kind": "call", "call": call.number, "function": function.id,
              "file": function.file, "name": function.name, "first": function.first,
              "last": function.last,
              "args": call.variables(frame, arguments_only=True)})
        if function.seen == MAX_CALLS:
            function.breakpoint.enabled = False  # enough of its calls: no more stops
    stack.append(call)
    return _step(call, frame, stack)


def _step(call, frame, stack):
    """A stop in the thread's innermost recorded call: a line event, or its end."""
    if call.returning is not None:
        return "continue"  # its return breakpoint is armed; another stop came first
    line = frame.find_sal().line
    if line == call.last_line:
        return "next"  # a later part of the line the last event showed
    if call.number is None or line == call.function.last:
        return _finish(call, frame, stack)
    call.last_line = line
    call.events += 1
    if call.events > MAX_EVENTS:
        call.number = None  # over the bound: the parent would drop it
        return _finish(call, frame, stack)
    emit({"kind": "line", "call": call.number, "line": line,
          "locals": call.variables(frame)})
    call.ran.add(line)
    return "next"


class Return(gdb.FinishBreakpoint):
    """A breakpoint at one call's return address, in its thread and for its frame only
    (recursion is told apart): ``stop`` runs when the call returns, with the value
    computed."""

    def __init__(self, frame):
        super().__init__(frame, internal=True)
        self.reached = False
        self.value = None

    def stop(self):
        self.reached = True
        self.value = self.return_value
        return True


def _finish(call, frame, stack):
    """Run the call to its return: its final locals now, its value where its return
    breakpoint stops. A project function it calls on the way, or another process, may stop
    first: that stop is handled, and the breakpoint waits."""
    call.final = call.variables(frame) if call.number is not None else None
    try:
        call.returning = Return(frame)
    except (ValueError, RuntimeError, gdb.error):
        stack.pop()  # no caller to return to: nothing to record
    return "continue"


def _returned(call, stack):
    """The call's return breakpoint stopped its thread in the caller: its return record,
    then the caller's step goes on where it was."""
    if call.number is not None:
        final, value = call.final, None
        returned = call.returning.value
        if returned is not None:
            value = encode(returned, Budget(), in_memory=False)
            if returned.type.strip_typedefs().code == gdb.TYPE_CODE_PTR and int(returned):
                final.append(["<return>", value, call.token(int(returned))])
        emit({"kind": "return", "call": call.number, "value": value, "locals": final})
    here = gdb.selected_frame()
    if stack and stack[-1].frame == here:
        if here.find_sal().pc == here.pc():
            return on_stop()  # the call was its line's last act: the next line starts here
        return "next"
    return "continue"


# --------------------------------------------------------------------------- the run


EXIT: dict[str, int] = {}


def on_exited(event):
    if hasattr(event, "exit_code") and event.inferior.num == 1:
        EXIT["code"] = event.exit_code


def _live():
    return [inferior for inferior in gdb.inferiors() if inferior.pid > 0]


def _stepping_elsewhere():
    """The command for a thread whose recorded call was being stepped when another
    process stopped (an ``exec``, a breakpoint): GDB stopped it wherever it was, and a
    plain ``continue`` would lose the rest of the call."""
    for inferior in _live():
        for thread in inferior.threads():
            if STACKS.get((inferior.num, thread.num)) and thread.is_valid() \
                    and not thread.is_running():
                thread.switch()  # a frame is valid or not in its own thread only
                action = on_stop()
                if action != "continue":
                    return action
    return "continue"


def _selected():
    """The selected thread's key in ``STACKS``; None when no thread is selected."""
    with contextlib.suppress(gdb.error):
        thread = gdb.selected_thread()
        if thread is not None:
            return thread.inferior.num, thread.num
    return None


def _unobserved(action):
    """Drop the calls the coming command lets run unobserved. ``next`` steps the selected
    thread, and every other thread runs freely meanwhile (``continue``: every thread), so
    a call of theirs being stepped would lose lines; worse, a later call at the same place
    (a loop calling the same function has the same frame id) would be taken for it. A
    thread whose innermost call has its return breakpoint armed stops at that return,
    so its calls lose nothing; but GDB deletes a return breakpoint when another thread of
    the same process stops (it looks for the breakpoint's frame in the stopping thread's
    stack only), and then that thread's calls are dropped too. The parent drops a call that
    never returns."""
    for key in [key for key, stack in STACKS.items() if not stack]:
        del STACKS[key]  # threads with no call: a run that forks often would pile them up
    selected = _selected() if action == "next" else None
    for key, stack in STACKS.items():
        if any(call.returning is not None and not call.returning.reached
               and not call.returning.is_valid() for call in stack):
            _drop(key, stack)  # GDB deleted a return breakpoint: no call here is whole
        elif key != selected and stack and stack[-1].returning is None:
            _abandon(key, stack)
            stack[:] = [call for call in stack if call.returning is not None]


def _drop(key, stack):
    """Forget a thread's calls, and their return breakpoints."""
    _abandon(key, stack)
    for call in stack:
        if call.returning is not None and call.returning.is_valid():
            call.returning.delete()
    stack.clear()


DROPPED: dict[Any, list[Any]] = {}
"""Per thread: the frames of its calls dropped while they may still be running (left by a
jump, or run unobserved), at most ``MAX_DROPPED``; a thread with more is in ``UNSURE``."""
MAX_DROPPED = 256
UNSURE: set[Any] = set()
JUMPED_TO: dict[tuple[str, int], bool] = {}
"""Per program file and breakpoint address: whether the function's own code jumps there."""


def _abandon(key, calls):
    """Remember the frames of ``calls``, about to be dropped, that may still run."""
    frames = DROPPED.setdefault(key, [])
    for call in calls:
        if call.returning is None and call.frame not in frames:
            if len(frames) == MAX_DROPPED:
                UNSURE.add(key)
                return
            frames.append(call.frame)


def _entered(frame, key):
    """Whether a stop at a function's breakpoint, in a frame where the thread has no call,
    is a call that begins. It is, unless the function's own code jumps back to that
    address (a ``do``/``while``, ``for (;;)`` or label first in its body) and the thread
    dropped a call in a frame with the same id (its frame id is also that of a later call
    from the same place): then the stop may be that dropped call's loop going round, and it
    is not recorded (a call taken for a new one would be recorded with its arguments as
    the loop left them)."""
    if not _jumped_to(frame):
        return True
    return key not in UNSURE and frame not in DROPPED.get(key, ())


def _jumped_to(frame):
    pc = frame.pc()
    try:
        key = (frame.find_sal().symtab.objfile.filename, pc)
    except (AttributeError, gdb.error, RuntimeError):
        return True
    if key not in JUMPED_TO:
        try:
            block = _body(frame)
            target = re.compile(rf"\b0x0*{pc:x}\b")
            JUMPED_TO[key] = any(
                instruction["addr"] != pc and target.search(instruction["asm"])
                for instruction in frame.architecture().disassemble(block.start,
                                                                    block.end - 1))
        except (gdb.error, RuntimeError):
            JUMPED_TO[key] = True
    return JUMPED_TO[key]


def _forget_gone():
    """Drop the processes GDB still lists that have ended (one that ends right after its
    fork can leave GDB waiting on it)."""
    for inferior in _live():
        state = ""
        with contextlib.suppress(OSError), \
                open(f"/proc/{inferior.pid}/stat", encoding="latin-1") as handle:
            state = handle.read().rpartition(")")[2].split()[0]
        if state in ("", "Z", "X"):
            with contextlib.suppress(gdb.error):
                gdb.execute(f"inferior {inferior.num}", to_string=True)
                gdb.execute("kill", to_string=True)


def _select_stopped():
    """Select a stopped thread to look at: the selected one, else the first stopped one of
    a live process (after a fork or an exit GDB may leave a running thread selected).
    False when there is none."""
    try:
        thread = gdb.selected_thread()
        if thread is not None and thread.is_valid() and not thread.is_running():
            gdb.selected_frame()
            return True
    except gdb.error:
        pass
    for inferior in _live():
        for thread in inferior.threads():
            if thread.is_valid() and not thread.is_running():
                thread.switch()
                return True
    return False


def main():
    for setting in ("pagination off", "confirm off", "detach-on-fork off",
                    "follow-fork-mode parent", "follow-exec-mode same",
                    "schedule-multiple on", "startup-with-shell off",
                    "debug-file-directory /nonexistent",
                    "print thread-events off", "print inferior-events off"):
        gdb.execute("set " + setting)
    gdb.execute("unset environment EXECBENCH_RECORDER_CONFIG")
    gdb.events.new_objfile.connect(on_new_objfile)
    gdb.events.exited.connect(on_exited)
    gdb.execute("catch exec")
    # The tests' signals go straight to them (a handler runs within the step it interrupts):
    # a stop for each would cut other threads' steps short, and one inside a library
    # without symbols could not be stepped from.
    gdb.execute("handle all nostop noprint pass")
    gdb.execute("set breakpoint pending on")
    for name in sorted(JUMPS):
        gdb.Breakpoint(name, internal=True)
    action, failures = "run", 0
    while True:
        _unobserved(action)
        try:
            gdb.execute(action, to_string=True)
            failures = 0
        except gdb.error:
            failures += 1
            if action == "next":  # no stepping from here (a library without symbols)
                selected = _selected()
                _drop(selected, STACKS.get(selected, []))
            if failures > 1:
                _forget_gone()
            if failures > MAX_FAILURES:
                break  # GDB cannot go on: what was recorded stands, the run has no end
        if not _live():
            break
        install()
        action = on_stop() if _select_stopped() else "continue"
        if action == "continue":
            action = _stepping_elsewhere()
    code = EXIT.get("code")
    emit({"kind": "end", "tests": [int(code == 0), 1],
          "exit": code if isinstance(code, int) else None})
    _out.flush()


main()
