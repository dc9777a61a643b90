"""Which ground truths a suite keeps: a call whose run took most of its limits would make
a verdict hinge on a few steps or on the machine's load, so it is dropped with its reason.

The rules read only what the interpreter counts (steps) where they can, and the safety
nets' marks (CPU and wall-clock time) where they must, from a run made as an answer's
check makes it, so that every build of the same sources keeps the same calls.
"""

from __future__ import annotations

from dataclasses import replace

from execbench.manifest import Skip
from execbench.program import Program
from execbench.sandbox.pool import Job, Sandbox
from execbench.sandbox.trace import RESULT_ONLY, Trace, TraceOptions
from execbench.sandbox.tracer import CPU_LIMIT
from execbench.tasks.base import STEP_SHARE, build_step_budget

CPU_NET_SHARE = 0.5
"""A ground truth that spent more than this share of the CPU limit, though within its
steps, is dropped: its check would have only twice the CPU it needed."""


def ground_truth_job(program: Program, index: int, recording: TraceOptions) -> Job:
    """The call run as its ground truth is recorded: with what the build's tasks ask for."""
    return Job(program.code, program.entry_point, program.calls[index].args, recording)


def within_budget(sandbox: Sandbox, calls: list[tuple[Program, int]], traces: list[Trace],
                  skipped: list[Skip], recording: TraceOptions
                  ) -> tuple[list[tuple[Program, int]], list[Trace]]:
    """The calls whose ground-truth run stayed comfortably inside the step limit, with their
    traces; the others are listed in ``skipped``.

    Answers are checked under the limit itself, so a ground truth that took most of it
    would make a verdict hinge on a few steps. A call is kept only if its run took at most
    ``STEP_SHARE`` of the limit. Steps are counted, so every build keeps the same calls,
    whatever the machine and its load. Work the count does not see (a builtin sorting a
    long list: one line, much CPU) is left to the safety nets: a run stopped by one is
    dropped, and so is a run that took more than ``CPU_NET_SHARE`` of the CPU limit, whose
    check would be at the net's mercy; only such C-heavy calls can still land differently
    on two machines, and the reason says which limit it was.

    The nets are read from a run made as a check makes it. Recording values costs far more
    CPU than the program does (``RECORDING_HEADROOM`` says how much), so a recording over
    the CPU share, or cut by a net, is run again plainly, and the plain run decides. A
    recording the CPU limit cut is made again (``_recorded_again``); one the wall clock cut
    is not (the program waited rather than worked). Where the two runs exist, the call is
    kept only if they agree (status, steps and result): a program that behaves otherwise
    when recorded has no one ground truth. Before, the recording's own cost put pure-Python
    calls at the nets' mercy, and a build on a busy machine kept other calls than one on an
    idle machine.
    """
    costly = [position for position, trace in enumerate(traces)
              if not _over_steps(trace, sandbox) and _net_reason(trace, sandbox)]
    plain = dict(zip(costly, run_all(sandbox, [plain_job(*calls[position])
                                               for position in costly]), strict=True))
    again = _recorded_again(sandbox, recording, [
        (position, calls[position]) for position in costly
        if traces[position].detail == CPU_LIMIT and refused(plain[position], sandbox) is None],
        plain)
    kept_calls, kept_traces = [], []
    for position, ((program, index), trace) in enumerate(zip(calls, traces, strict=True)):
        trace = again.get(position, trace)
        reason = refused(plain.get(position, trace), sandbox)
        if reason is None and position in plain:
            reason = _disagreement(trace, plain[position])
        if reason is None:
            kept_calls.append((program, index))
            kept_traces.append(trace)
        else:
            skipped.append(Skip(where=f"{program.id}#{index}", kind="call", reason=reason))
    return kept_calls, kept_traces


def _over_steps(trace: Trace, sandbox: Sandbox) -> bool:
    stepped_out = trace.status == "timeout" and not _cut(trace)
    return stepped_out or trace.steps > build_step_budget(sandbox)


def _cut(trace: Trace) -> bool:
    """Whether a safety net (CPU or wall-clock time) ended the run, not its steps."""
    return trace.status == "timeout" and not (trace.detail or "").startswith("step limit")


def _net_reason(trace: Trace, sandbox: Sandbox) -> str | None:
    """Why the safety nets drop a call whose run gave ``trace``, if they do."""
    limits = sandbox.limits
    if _cut(trace):
        return f"the ground-truth run hit the {trace.detail}"
    if trace.cpu_time > CPU_NET_SHARE * limits.cpu_seconds:
        return (f"the ground-truth run took more than {CPU_NET_SHARE:.0%} of the CPU limit "
                f"({limits.cpu_seconds:g} s) in work the steps do not count (C code), so "
                "checking an answer would hinge on timing")
    return None


def refused(trace: Trace, sandbox: Sandbox) -> str | None:
    """Why a call whose run gave ``trace`` is dropped, if it is; None if it is kept."""
    if _over_steps(trace, sandbox):
        return (f"the ground-truth run took more than {STEP_SHARE:.0%} of the step limit "
                f"({sandbox.limits.steps:,} lines), so checking an answer would hinge on it")
    return _net_reason(trace, sandbox)


def _disagreement(recorded: Trace, plain: Trace) -> str | None:
    """Why a recorded run cannot stand for the call that its plain run shows, if so."""
    if _cut(recorded):
        return (f"recording the ground-truth run hit the {recorded.detail}, though a plain "
                "run of it stays within the limits")
    if (recorded.status, recorded.steps, recorded.value) != \
            (plain.status, plain.steps, plain.value):
        return (f"the recorded run and a plain run of the call differ ({recorded.status} "
                f"against {plain.status}, {recorded.steps:,} lines against {plain.steps:,}, "
                "or what it returned): it has no one ground truth")
    return None


def plain_job(program: Program, index: int) -> Job:
    """The call run as an answer's check runs it: lines only, nothing recorded."""
    return Job(program.code, program.entry_point, program.calls[index].args, RESULT_ONLY)


def run_all(sandbox: Sandbox, jobs: list[Job]) -> list[Trace]:
    return [future.result() for future in [sandbox.submit(job) for job in jobs]]


RECORDING_HEADROOM = 20
"""How many times the check's CPU and wall-clock limits a call's second recording gets.
Recording costs up to hundreds of times the plain run on small calls and 68 times on one of
HumanEval's longest kept calls (1.2 s recorded, 0.018 s plain, measured on a busy machine);
the recorders' records are bounded in number and the steps bound the rest, so an honest
recording of a call within the step budget ends well inside 20 times the limit (40 s by
default), whatever the machine's load. A program that works only while it is recorded costs
the build that much CPU once per call."""


def _recorded_again(sandbox: Sandbox, recording: TraceOptions,
                    calls: list[tuple[int, tuple[Program, int]]],
                    plain: dict[int, Trace]) -> dict[int, Trace]:
    """The calls (by position) recorded again in a sandbox of their own with
    ``RECORDING_HEADROOM`` times the time; made only when some call needs it. A build that
    records nothing beyond the result has them already: their plain runs."""
    if recording == RESULT_ONLY:
        return {position: plain[position] for position, _ in calls}
    if not calls:
        return {}
    limits = sandbox.limits
    loose = replace(limits, cpu_seconds=limits.cpu_seconds * RECORDING_HEADROOM,
                    wall_seconds=limits.wall_seconds * RECORDING_HEADROOM)
    with Sandbox(workers=sandbox.size, limits=loose) as box:
        traces = run_all(box, [ground_truth_job(*call, recording) for _, call in calls])
    return {position: trace for (position, _), trace in zip(calls, traces, strict=True)}
