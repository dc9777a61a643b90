"""``execbench serve-rewards``: verdicts as rewards over HTTP, for trainers that call a
remote reward model (OpenRLHF's ``--remote_rm_url``)."""

from __future__ import annotations

from typing import Annotated

import typer

from execbench.cli.app import err, fail


def serve_rewards(
    port: Annotated[int, typer.Option(help="The port to listen on.")] = 8000,
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    reward: Annotated[str, typer.Option(
        help="The reward option, for every task (verdict, jaccard, ...) or per task "
             "(coverage=jaccard,simulation=coherence); `execbench ls rewards` lists them.")
    ] = "verdict",
    workers: Annotated[int | None, typer.Option(
        help="Sandbox workers for the tasks that run code (default: one per core).")] = None,
) -> None:
    """Serve rewards: POST a batch to /get_reward, get one reward per response."""
    from execbench.reward_server import serve
    from execbench.rewards import Rewarder, RewardError

    if not 0 < port < 65536:
        fail(f"--port must be 1..65535, not {port}")
    if workers is not None and workers < 1:
        fail("--workers must be at least 1")
    try:
        rewarder = Rewarder(reward, workers=workers)
    except RewardError as exc:
        fail(str(exc))
    err.print(f"serving rewards ({rewarder.choice.describe()}) on http://{host}:{port}/get_reward"
              " (Ctrl-C stops)", highlight=False)
    with rewarder:
        try:
            serve(rewarder, host, port, log=lambda line: err.print(line, highlight=False))
        except OSError as exc:
            fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")
