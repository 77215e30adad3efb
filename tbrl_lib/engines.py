"""The two errors of an engine that runs sandboxes (a Docker engine, a Ray cluster), below
everything that raises or catches them: `tbrl` ends either in one line, not a traceback."""


class EngineUnavailable(RuntimeError):
    """The backend does not answer (no engine, no cluster); the message says how to fix it."""


class EngineOutage(EngineUnavailable):
    """The backend stopped answering mid-run and did not come back within the wait. A
    `EngineUnavailable`, so `tbrl` ends it in one line (what happened, how to resume)."""
