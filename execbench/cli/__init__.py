"""The ``execbench`` command, one module per command. ``app`` is the console script's
entry point (``execbench.cli:app``); the commands are registered here, in the order
``--help`` lists them. Each command imports what it needs when it runs, so that the
command starts fast (``execbench --help`` imports no provider, task or report)."""

from execbench.cli import (
    build,
    doctor,
    export,
    harvest,
    ls,
    report,
    run,
    score,
    serve_rewards,
    show,
)
from execbench.cli.app import app

__all__ = ["app"]

app.command()(build.build)
app.command()(run.run)
app.command()(show.show)
app.command()(score.score)
app.command()(report.report)
app.command()(harvest.harvest)
app.command()(export.export)
app.command("serve-rewards")(serve_rewards.serve_rewards)
app.command("ls")(ls.list_things)
app.command()(doctor.doctor)
