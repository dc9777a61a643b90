"""``execbench serve-rewards``: verdicts as rewards over HTTP, for trainers that call a
remote reward model (OpenRLHF's ``--remote_rm_url``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from execbench.cli.app import err, fail

if TYPE_CHECKING:
    from execbench.sandbox.pool import Limits

TOKEN_HELP = ("The bearer token every request but /health must carry (at least 16 "
              "characters); without one the server listens on loopback only. Prefer the "
              "environment variable: other users can read a command line.")


def serve_rewards(
    port: Annotated[int, typer.Option(help="The port to listen on.")] = 8000,
    host: Annotated[str, typer.Option(
        help="The address to listen on; beyond 127.0.0.1 or ::1 only with a token.")
    ] = "127.0.0.1",
    reward: Annotated[str, typer.Option(
        help="The reward option, for every task (verdict, jaccard, ...) or per task "
             "(coverage=jaccard,simulation=coherence); `execbench ls rewards` lists them.")
    ] = "verdict",
    workers: Annotated[int | None, typer.Option(
        help="Sandbox workers per set of limits, for the tasks that run code "
             "(default: one per core).")] = None,
    token: Annotated[str | None, typer.Option(
        envvar="EXECBENCH_REWARD_TOKEN", show_envvar=True, help=TOKEN_HELP)] = None,
    suite: Annotated[list[Path], typer.Option(
        help="A suite whose exported rows this server scores: its sandbox limits join the "
             "sets rows may name (repeatable). Without --suite or --limits: the limits "
             "`execbench build` uses by default.")] = [],  # noqa: B006
    limits: Annotated[list[str], typer.Option(
        help="Sandbox limits rows may name, as a ground truth's fields "
             "(cpu_seconds=4,wall_seconds=20,memory_mb=2048; repeatable).")
    ] = [],  # noqa: B006
    max_body_mb: Annotated[int, typer.Option(
        help="The largest request body read, MiB.")] = 32,
    max_items: Annotated[int, typer.Option(help="The most responses in one batch.")] = 4096,
) -> None:
    """Serve rewards: POST a batch to /get_reward, get one reward per response."""
    from execbench.reward_server import ServeOptions, check_exposure, serve
    from execbench.rewards import Rewarder

    if not 0 < port < 65536:
        fail(f"--port must be 1..65535, not {port}")
    if workers is not None and workers < 1:
        fail("--workers must be at least 1")
    if max_body_mb < 1 or max_items < 1:
        fail("--max-body-mb and --max-items must be at least 1")
    options = ServeOptions(token=token, max_body_bytes=max_body_mb * 1024 * 1024,
                           max_items=max_items)
    try:
        options.check()
        check_exposure(host, token)
        rewarder = Rewarder(reward, workers=workers, limits=_served_limits(suite, limits))
    except ValueError as exc:  # a RewardError too: a bad --limits or --reward
        fail(str(exc))
    guarded = "token required" if token is not None else "loopback, no token"
    err.print(f"serving rewards ({rewarder.choice.describe()}; {guarded}) on "
              f"http://{host}:{port}/get_reward (Ctrl-C stops)", highlight=False)
    with rewarder:
        try:
            # markup off: a logged line holds a client's request path and labels
            serve(rewarder, host, port, options=options,
                  log=lambda line: err.print(line, highlight=False, markup=False))
        except OSError as exc:
            fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")


def _served_limits(suites: list[Path], given: list[str]) -> set[Limits]:
    """The closed set of sandbox limits: each suite's, each --limits, or the default."""
    from execbench.rewards import parse_limits
    from execbench.sandbox.pool import Limits
    from execbench.suite import SuiteError, SuiteFile

    served = {parse_limits(text) for text in given}
    for folder in suites:
        try:
            served.add(SuiteFile.open(folder).limits)
        except SuiteError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot read the suite {folder}: {exc.strerror or exc}")
    return served or {Limits()}
