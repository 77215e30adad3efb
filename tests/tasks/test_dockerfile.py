"""FROM lines: which external images a task starts from, and rewriting them in place."""

from __future__ import annotations

from tbrl_lib.tasks.dockerfile import base_images, rewrite_bases

from .helpers import make_task

MULTI_STAGE = """\
FROM golang:1.21 AS build
RUN cat > /app.py <<'EOF'
from flask import Flask
FROM golang:1.21
EOF
RUN psql -c "SELECT * \\
FROM users"
FROM build AS test
# FROM golang:1.21 (a comment)
FROM --platform=linux/amd64 debian:trixie
"""


def test_base_images_skip_heredocs_continuations_comments_and_stage_references():
    task = make_task(environment={"dockerfile": MULTI_STAGE})
    assert base_images(task) == ["golang:1.21", "debian:trixie"]
    assert base_images(make_task(environment={"image": "x/y:1"})) == ["x/y:1"]


def test_rewrite_replaces_only_the_from_images_and_keeps_every_other_byte():
    text = MULTI_STAGE.replace("\n", "\r\n", 1)  # a CRLF line survives too
    out = rewrite_bases(text, {"golang:1.21": "local/go:1", "build": "never"})
    assert out.startswith("FROM local/go:1 AS build\r\n")
    assert out.count("golang:1.21") == 2  # the heredoc body and the comment are left alone
    assert "FROM build AS test" in out and "--platform=linux/amd64 debian:trixie" in out
    assert out.replace("local/go:1", "golang:1.21", 1) == text
    assert rewrite_bases(text, {}) == text
