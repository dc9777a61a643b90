"""Running programs: the sandbox pool, its workers, the tracer and its recorders.

The built-in recorders register themselves when their module is imported; importing them
here means every process that runs traces (a sandbox worker) or asks for them (the
parent, through ``TraceOptions``) knows the same ones.
"""

from execbench.sandbox import (
    opcodes,  # noqa: F401 - registers the "opcodes" recorder
    properties,  # noqa: F401 - registers the "properties" recorder
)
