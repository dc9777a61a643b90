"""``execbench doctor``: which sandbox confinement layers are on here; with ``--model``, what
an OpenAI-compatible server does that a run depends on, and the settings to use with it."""

from __future__ import annotations

from typing import Annotated

import typer

from execbench.cli.app import fail, out, pairs

ModelName = Annotated[str | None, typer.Option(
    help="Check this model's server instead of the sandbox: openai-api/<name>/<model> "
         "(or openai/<model>), as `execbench run` takes it.")]
BaseUrls = Annotated[list[str], typer.Option(
    metavar="URL", help="The server's base URL (as for `execbench run`; the first is "
                        "checked).")]
ModelArgs = Annotated[list[str], typer.Option(
    "--model-arg", "-M", metavar="KEY=VALUE",
    help="Repeatable: request fields to check along (sent with every probe).")]
Timeout = Annotated[float, typer.Option(help="Seconds each probe request may take.")]


def doctor(model: ModelName = None,
           model_base_url: BaseUrls = [],  # noqa: B006
           model_arg: ModelArgs = [],  # noqa: B006
           timeout: Timeout = 60.0) -> None:
    """Say which sandbox confinement layers are on here; with --model, probe the model's
    server once and print the -M settings and flags to run it with."""
    if model is not None:
        _server(model, ",".join(model_base_url) or None, pairs(model_arg, "-M"), timeout)
        return
    if model_base_url or model_arg:
        fail("--model-base-url and -M go with --model")
    _sandbox()


def _server(name: str, base_url: str | None, model_args: dict[str, str],
            timeout: float) -> None:
    """Probe the server, print what was seen and the settings; exit 1 if no run can work."""
    import asyncio

    from execbench.models import ModelError, get_model
    from execbench.models.http.server_check import check_server
    from execbench.models.openai import OpenAIModel

    try:
        model = get_model(name, base_url=base_url, model_args=model_args)
    except ModelError as exc:
        fail(str(exc))
    if not isinstance(model, OpenAIModel):
        fail(f"doctor checks a running OpenAI-compatible server (openai-api/<name>/<model> "
             f"with --model-base-url), not {name}")
    report = asyncio.run(check_server(model, timeout))
    say = [f"{name} at {report.url}"]
    mark = {True: "ok", False: "!!", None: "--"}
    say += [f"  {mark[check.ok]} {check.name:15} {check.seen}" for check in report.checks]
    if report.unusable is None:
        say.append("settings to run with:" if report.settings else
                   "settings to run with: none needed")
        say += [f"  {setting}: {'; '.join(whys)}" for setting, whys in report.settings.items()]
    out.print("\n".join(say), highlight=False, markup=False)
    if report.unusable is not None:
        fail(f"a run cannot work with this server: {report.unusable}", 1)


def _sandbox() -> None:
    """Start a sandbox worker and say which confinement layers are on here, and why not."""
    from execbench.sandbox.pool import Job, Sandbox

    with Sandbox(workers=1) as sandbox:
        trace = sandbox.run(Job("def f():\n    return 1\n", "f", ""))
        layers = sandbox.layers
    if trace.status != "ok":
        fail(f"the sandbox could not run a trivial program: {trace.status} {trace.detail}", 1)
    on = sum(state.startswith("on") for state in layers.values())
    out.print(f"sandbox: {on} of {len(layers)} confinement layers on", highlight=False)
    for name, state in layers.items():
        out.print(f"  {name:12} {state}", highlight=False)
    from execbench.harvest.jail import layers as harvest_layers

    jail = harvest_layers()
    out.print(f"harvest confinement: {sum(s.startswith('on') for s in jail.values())} of "
              f"{len(jail)} layers on", highlight=False)
    for name, state in jail.items():
        out.print(f"  {name:12} {state}", highlight=False)
    if on < len(layers):
        out.print("Layers that are off are warned about once per run; see docs/sandbox.md "
                  "for what each one guards.", highlight=False)
