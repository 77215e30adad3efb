"""`python -m tbrl_lib.cli ...` is `tbrl ...` (what `accelerate launch -m` starts)."""

from tbrl_lib.cli.app import app

app()
