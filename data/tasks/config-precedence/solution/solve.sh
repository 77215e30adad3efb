#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/settings.py <<'EOF'
import configparser
import os

TRUE, FALSE = {"true", "yes", "1"}, {"false", "no", "0"}


def _read(path):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return {f"{s}.{k}": v for s in parser.sections() for k, v in parser[s].items()}


def _convert(key, raw, default):
    if default.lower() in TRUE | FALSE and not default.isdigit():
        low = raw.strip().lower()
        if low in TRUE | FALSE:
            return low in TRUE
        raise ValueError(f"{key}: expected a boolean, got {raw!r}")
    try:
        int(default)
    except ValueError:
        return raw
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{key}: expected an integer, got {raw!r}") from None


def load_settings(defaults_path, override_path=None, env=None):
    env = os.environ if env is None else env
    defaults = _read(defaults_path)
    raw = dict(defaults)
    if override_path and os.path.exists(override_path):
        for key, value in _read(override_path).items():
            if key not in defaults:
                raise KeyError(f"unknown setting {key}")
            raw[key] = value
    by_env = {"APP_" + k.replace(".", "__").upper(): k for k in defaults}
    for name, value in env.items():
        if name.startswith("APP_"):
            if name not in by_env:
                raise KeyError(f"unknown setting variable {name}")
            raw[by_env[name]] = value
    return {k: _convert(k, v, defaults[k]) for k, v in raw.items()}
EOF
