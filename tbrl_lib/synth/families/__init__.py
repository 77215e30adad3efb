"""Procedural task families: each is a function `(rng, difficulty) -> Draft`.

`FAMILIES` maps a family's name to its `Family` (name, category, generator, one-line
description). Seeding, ids and batches live in `tbrl_lib.synth.generate`.
"""

from __future__ import annotations

from tbrl_lib.synth.families.base import Draft, Family
from tbrl_lib.synth.families.copy_answer import copy_answer
from tbrl_lib.synth.families.count_matches import count_matches
from tbrl_lib.synth.families.fix_script import fix_script
from tbrl_lib.synth.families.logs_data import data_transform, log_analysis
from tbrl_lib.synth.families.repair import build_fix, config_repair, script_debug
from tbrl_lib.synth.families.sqlite_report import sqlite_report
from tbrl_lib.synth.families.system import git_surgery, permissions_users, service_port
from tbrl_lib.synth.families.write_word import write_word

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in [
        Family(
            "log_analysis",
            "data-processing",
            log_analysis,
            "answer questions about web access logs (planted answers, noise, gzip rotation)",
        ),
        Family(
            "data_transform",
            "data-processing",
            data_transform,
            "filter, group and aggregate a CSV into JSON (dirty fields, duplicates)",
        ),
        Family(
            "config_repair",
            "system-administration",
            config_repair,
            "repair a service's JSON config against its settings notes",
        ),
        Family(
            "script_debug",
            "debugging",
            script_debug,
            "fix planted bugs in a Python report script; hidden inputs in the tests",
        ),
        Family(
            "build_fix",
            "software-engineering",
            build_fix,
            "fix a broken zipapp build (wrong paths, syntax, imports, version stamping)",
        ),
        Family(
            "permissions_users",
            "system-administration",
            permissions_users,
            "create users and groups, set ownership, modes, setgid dirs, locked accounts",
        ),
        Family(
            "git_surgery",
            "version-control",
            git_surgery,
            "revert, cherry-pick, tag, purge a secret from all history",
        ),
        Family(
            "service_port",
            "networking",
            service_port,
            "serve a small JSON HTTP API on a port with a start script",
        ),
        Family(
            "sqlite_report",
            "data-querying",
            sqlite_report,
            "answer questions from a SQLite database into a CSV report",
        ),
        Family(
            "copy_answer",
            "file-operations",
            copy_answer,
            "copy a ticket code and owner from the instruction into files (partial credit)",
        ),
        Family(
            "write_word",
            "file-operations",
            write_word,
            "write the word the instruction names into the file it names (the CPU demo's family)",
        ),
        Family(
            "count_matches",
            "text-processing",
            count_matches,
            "count the lines of a log that hold a level word into a file (grep -c)",
        ),
        Family(
            "fix_script",
            "debugging",
            fix_script,
            "replace the placeholder a one-line script prints, in place (sed -i)",
        ),
    ]
}

__all__ = ["FAMILIES", "Draft", "Family"]
