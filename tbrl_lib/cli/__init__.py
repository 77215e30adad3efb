"""The `tbrl` command: one module per command group, each thin over the library functions the
notebooks call; nothing in the library imports this package (`tests/test_layering.py`).

    app.py        the root: global options, the one-line error handling, the groups mounted
    workspace.py  doctor, setup, demo          upstream.py  upstream fetch|status
    images.py     images bootstrap|status      docker.py    docker ensure|reap
    tasks.py      tasks convert|stats|generate|validate|check
    agent.py      agent prompt|parse|run|tiny-model
    judge.py      judge eval|calibrate|score|check-config
    evaluate.py   eval run|show|compare        train.py     train run|sft|presets|settings|plan|preflight|launch

`tbrl_lib.cli:app` is the console script; `python -m tbrl_lib.cli` runs the same (accelerate
launches `-m tbrl_lib.cli train run`).
"""

from tbrl_lib.cli.app import app, main

__all__ = ["app", "main"]
