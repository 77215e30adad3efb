"""`tbrl tasks` commands (filled in by the tasks package)."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True)


# `tbrl tasks generate`: procedural task families, owned by tbrl_lib.synth (helper "synth").
from tbrl_lib.synth.cli import generate as _synth_generate  # noqa: E402

app.command("generate")(_synth_generate)
