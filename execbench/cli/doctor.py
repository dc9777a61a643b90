"""``execbench doctor``: which sandbox confinement layers are on here."""

from __future__ import annotations

from execbench.cli.app import fail, out


def doctor() -> None:
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
    from execbench.sandbox.harvest_jail import layers as harvest_layers

    jail = harvest_layers()
    out.print(f"harvest confinement: {sum(s.startswith('on') for s in jail.values())} of "
              f"{len(jail)} layers on", highlight=False)
    for name, state in jail.items():
        out.print(f"  {name:12} {state}", highlight=False)
    if on < len(layers):
        out.print("Layers that are off are warned about once per run; see the README's "
                  "'The sandbox' for what each one guards.", highlight=False)
