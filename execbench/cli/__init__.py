"""The ``execbench`` command, one module per command. ``app`` is the console script's
entry point (``execbench.cli:app``); the commands are registered here, in the order
``--help`` lists them. Each command imports what it needs when it runs, so that the
command starts fast (``execbench --help`` imports no provider, task or report)."""

from execbench.cli import (
    build,
    doctor,
    export,
    generate,
    harvest,
    ls,
    report,
    run,
    score,
    serve_rewards,
    show,
)
from execbench.cli.app import app, one_line_summaries, plugin_errors_said

__all__ = ["app"]

app.command()(plugin_errors_said(build.build))
app.command()(plugin_errors_said(run.run))
app.command()(plugin_errors_said(show.show))
app.command()(plugin_errors_said(score.score))
app.command()(plugin_errors_said(report.report))
app.command()(plugin_errors_said(harvest.harvest))
app.command()(plugin_errors_said(export.export))
app.command("generate-programs")(plugin_errors_said(generate.generate_programs))
app.command("serve-rewards")(plugin_errors_said(serve_rewards.serve_rewards))
app.command("ls")(plugin_errors_said(ls.list_things))
app.command()(plugin_errors_said(doctor.doctor))
one_line_summaries()
