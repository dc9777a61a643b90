"""The ``opcodes`` recorder: ``lines``' record and the bytecode operations the program's
frames executed (``opcodes`` in the result), the cost the generalization paper filters
contest solutions by (at most 1,000 a run; ``suite.contest_filtering``).

Line events undercount that cost, since a line runs one operation or many; this counts
the interpreter's own operations, so it is exact for the version that runs it and the
same on every machine. It costs an event per operation, so only that filter's check run
asks for it. Python 3.11 reports operations to ``sys.settrace`` (``f_trace_opcodes``); on
3.12 a code object's first run under ``sys.settrace`` reports none (it is instrumented for
them only from its next run), so from 3.12 they come from ``sys.monitoring``'s
``INSTRUCTION`` events on the program's code objects, set before it runs, while
``sys.settrace`` still feeds the lines as for ``lines``.
"""

from __future__ import annotations

import sys
from types import CodeType
from typing import Any

from execbench.sandbox import tracer
from execbench.sandbox.monitor import TOOL_IDS, TOOL_NAME
from execbench.sandbox.recording import CompiledProgram, Recorder

_monitoring: Any = getattr(sys, "monitoring", None)
"""``sys.monitoring``, typed loosely: the project type-checks as Python 3.11."""
MONITORED = sys.version_info >= (3, 12)


@tracer.register_recorder
class OpcodeRecorder(Recorder):
    """Counts the bytecode operations of the program's frames beside ``lines``' record."""

    name = "opcodes"

    def __init__(self, program: CompiledProgram, options: dict[str, Any]) -> None:
        super().__init__(program, options)
        self.opcodes = [0]
        self.tool: int | None = None

    def start(self) -> None:
        if MONITORED:
            self._monitor()
        super().start()

    def stop(self) -> None:
        super().stop()
        tool, self.tool = self.tool, None
        if tool is not None and _monitoring.get_tool(tool) == TOOL_NAME:
            # the program may have freed or taken the id: then it has nothing of ours
            for code in _codes(self.program.code):
                _monitoring.set_local_events(tool, code, 0)
            _monitoring.register_callback(tool, _monitoring.events.INSTRUCTION, None)
            _monitoring.free_tool_id(tool)

    def _monitor(self) -> None:
        """Count every instruction of the program's code objects (``sys.monitoring``)."""
        for tool in TOOL_IDS:
            try:
                _monitoring.use_tool_id(tool, TOOL_NAME)
            except ValueError:  # taken by another tool
                continue
            self.tool = tool
            break
        else:
            raise RuntimeError("no sys.monitoring tool id is free to count operations")
        opcodes = self.opcodes

        def counted(code: CodeType, offset: int) -> None:
            opcodes[0] += 1

        _monitoring.register_callback(self.tool, _monitoring.events.INSTRUCTION, counted)
        for code in _codes(self.program.code):
            _monitoring.set_local_events(self.tool, code, _monitoring.events.INSTRUCTION)

    def global_trace(self, frame, event, arg):
        lines = super().global_trace(frame, event, arg)
        if lines is None or MONITORED:
            return lines
        frame.f_trace_opcodes = True
        opcodes = self.opcodes

        def trace(frame, event, arg):
            if event == "opcode":
                opcodes[0] += 1
            else:
                lines(frame, event, arg)
            return trace

        return trace

    def result(self) -> dict[str, Any]:
        return {**super().result(), "opcodes": self.opcodes[0]}


def _codes(code: CodeType) -> list[CodeType]:
    """``code`` and every code object nested in it (functions, classes, comprehensions)."""
    found, stack = [], [code]
    while stack:
        item = stack.pop()
        found.append(item)
        stack.extend(const for const in item.co_consts if isinstance(const, CodeType))
    return found
