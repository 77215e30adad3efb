import os
import sys
import tempfile

import pytest

sys.path.insert(0, "/app")
DEFAULTS = "/app/conf/defaults.ini"


def ini(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False)
    f.write(text)
    f.close()
    return f.name


def test_defaults_typed():
    from settings import load_settings
    s = load_settings(DEFAULTS, env={})
    assert s == {"server.host": "0.0.0.0", "server.port": 8080, "server.workers": 2,
                 "db.url": "sqlite:///app.db", "db.pool": 5, "db.debug": False}
    assert type(s["server.port"]) is int and type(s["db.debug"]) is bool


def test_layers_precedence():
    from settings import load_settings
    path = ini("[server]\nport = 9000\nworkers = 8\n[db]\ndebug = YES\n")
    s = load_settings(DEFAULTS, path, env={"APP_SERVER__PORT": "9100", "OTHER": "x", "APP_DB__URL": "postgres://h/db"})
    assert s["server.port"] == 9100 and s["server.workers"] == 8 and s["db.debug"] is True
    assert s["db.url"] == "postgres://h/db" and s["server.host"] == "0.0.0.0"
    assert load_settings(DEFAULTS, "/nonexistent/override.ini", env={})["db.pool"] == 5


def test_unknown_keys_rejected():
    from settings import load_settings
    with pytest.raises(KeyError, match="server.colour"):
        load_settings(DEFAULTS, ini("[server]\ncolour = red\n"), env={})
    with pytest.raises(KeyError, match="APP_DB__POLL"):
        load_settings(DEFAULTS, env={"APP_DB__POLL": "3"})


def test_bad_values_and_os_environ():
    from settings import load_settings
    with pytest.raises(ValueError, match="server.workers"):
        load_settings(DEFAULTS, env={"APP_SERVER__WORKERS": "many"})
    with pytest.raises(ValueError):
        load_settings(DEFAULTS, env={"APP_DB__DEBUG": "maybe"})
    os.environ["APP_DB__POOL"] = "11"
    try:
        assert load_settings(DEFAULTS)["db.pool"] == 11
    finally:
        del os.environ["APP_DB__POOL"]
