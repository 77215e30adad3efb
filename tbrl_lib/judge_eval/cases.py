"""Labelled judge cases: a trajectory plus the score range a good process judge should give.

Format (the upstream one, read in place from the upstream folder, `tbrl_lib.upstream`, and
ours in `data/judge_cases/`): a directory with `cases.yaml` listing `{id, expected_range: [lo, hi],
note, rubric?, source?}` and one sub-directory per case holding `messages.json` (OpenAI-style
chat: the task first, tool outputs as user turns) and `dockerfile` (the environment).
`rubric` (ours) names the rubric items / caps the case exercises; `source` says whether the
trajectory came from a real episode of our agent or was written by hand. `at_most: {case:
OTHER, ratio: R}` (optional) is a relative label: a good judge scores this case at most R
times what it gives OTHER, a case of the same file (todo theatre at most half of a short
genuine run); `relative_labels` checks it for any judge's scores.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tbrl_lib import upstream
from tbrl_lib.rewards.judges.base import JudgeInput
from tbrl_lib.workspace import workspace_path

AUTO = "auto"
"""Suite spec: ours, plus the upstream six when they are there."""


class CaseFormatError(ValueError):
    """A judge-case directory is malformed; the message names the file and field."""


@dataclass(frozen=True)
class JudgeCase:
    id: str
    expected_range: tuple[float, float]
    messages: list[dict]
    dockerfile: str
    note: str = ""
    rubric: tuple[str, ...] = ()
    source: str = ""
    suite: str = ""
    at_most: tuple[str, float] | None = None
    """(other case id, ratio): this case should score at most ratio x the other's score."""

    @property
    def center(self) -> float:
        return (self.expected_range[0] + self.expected_range[1]) / 2

    def judge_input(self) -> JudgeInput:
        return JudgeInput.from_messages(self.messages, environment=self.dockerfile, task_id=self.id)


@dataclass
class CaseSet:
    root: Path
    cases: list[JudgeCase] = field(default_factory=list)


def load_cases(root: str | Path, suite: str | None = None) -> CaseSet:
    """Read `root/cases.yaml` and every case directory it lists (strictly); each case's
    `suite` is `suite`, or the directory's name."""
    root = Path(root)
    index = root / "cases.yaml"
    if not index.exists():
        raise CaseFormatError(f"{index} not found: a judge-case directory needs cases.yaml")
    try:
        raw = yaml.safe_load(index.read_text()) or {}
    except yaml.YAMLError as err:
        raise CaseFormatError(f"{index}: not valid YAML ({err})") from err
    entries = raw.get("cases")
    if not isinstance(entries, list) or not entries:
        raise CaseFormatError(f"{index}: needs a non-empty `cases:` list")
    out = CaseSet(root=root)
    seen: set[str] = set()
    ids = {str(e.get("id")) for e in entries if isinstance(e, dict)}
    for i, entry in enumerate(entries):
        where = f"{index}: cases[{i}]"
        if not isinstance(entry, dict) or "id" not in entry:
            raise CaseFormatError(f"{where}: each case needs an `id`")
        cid = str(entry["id"])
        if cid in seen:
            raise CaseFormatError(f"{where}: duplicate id {cid!r}")
        seen.add(cid)
        rng = entry.get("expected_range")
        if (
            not isinstance(rng, list)
            or len(rng) != 2
            or not all(isinstance(v, (int, float)) for v in rng)
            or not 0 <= rng[0] <= rng[1] <= 1
        ):
            raise CaseFormatError(
                f"{where} ({cid}): expected_range must be [lo, hi] with 0 <= lo <= hi <= 1, "
                f"got {rng!r}"
            )
        case_dir = root / cid
        messages_path, docker_path = case_dir / "messages.json", case_dir / "dockerfile"
        for path in (messages_path, docker_path):
            if not path.exists():
                raise CaseFormatError(f"{where} ({cid}): {path} is missing")
        try:
            messages = json.loads(messages_path.read_text())
        except json.JSONDecodeError as err:
            raise CaseFormatError(f"{messages_path}: not valid JSON ({err})") from err
        bad = [
            j
            for j, m in enumerate(messages)
            if not isinstance(m, dict)
            or m.get("role") not in ("system", "user", "assistant")
            or "content" not in m
        ]
        if not isinstance(messages, list) or not messages or bad:
            raise CaseFormatError(
                f"{messages_path}: must be a list of {{role, content}} messages "
                f"(bad entries at {bad[:5]})"
            )
        out.cases.append(
            JudgeCase(
                id=cid,
                expected_range=(float(rng[0]), float(rng[1])),
                messages=messages,
                dockerfile=docker_path.read_text(),
                note=str(entry.get("note", "")),
                rubric=tuple(entry.get("rubric") or ()),
                source=str(entry.get("source", "")),
                suite=suite or root.name,
                at_most=_at_most(entry.get("at_most"), where, cid, ids),
            )
        )
    return out


def _at_most(raw, where: str, cid: str, ids: set[str]) -> tuple[str, float] | None:
    if raw is None:
        return None
    ok = isinstance(raw, dict) and set(raw) == {"case", "ratio"}
    ratio = raw.get("ratio") if ok else None
    if not ok or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
        raise CaseFormatError(
            f"{where} ({cid}): at_most must be {{case: ID, ratio: R}} with 0 < R <= 1, got {raw!r}"
        )
    if raw["case"] not in ids or raw["case"] == cid:
        raise CaseFormatError(
            f"{where} ({cid}): at_most names {raw['case']!r}, which is not another case of "
            "this cases.yaml"
        )
    return str(raw["case"]), float(ratio)


def relative_labels(cases: list[JudgeCase], scores: dict[str, float]) -> list[dict]:
    """Each `at_most` label with the two scores (`scores`: case id -> score) and whether it
    holds; labels whose cases have no score are left out."""
    rows = []
    for case in cases:
        if case.at_most is None:
            continue
        other, ratio = case.at_most
        if case.id in scores and other in scores:
            rows.append(
                {
                    "case": case.id,
                    "score": scores[case.id],
                    "at_most": f"{ratio:g} x {other}",
                    "other_score": scores[other],
                    "holds": scores[case.id] <= ratio * scores[other] + 1e-9,
                }
            )
    return rows


def our_cases() -> Path:
    """Our labelled cases: `data/judge_cases/` in the workspace."""
    return workspace_path("data", "judge_cases")


def suite_dirs(spec: str = AUTO, note: Callable[[str], None] = print) -> dict[str, Path]:
    """Suite name -> case directory. `spec` is `auto` (ours, plus upstream when present;
    otherwise `note` gets the one-line hint) or a comma list of `ours`, `upstream`, each of
    which must exist (`UpstreamMissing` names the fix)."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if names == [AUTO]:
        found = upstream.upstream_path(upstream.JUDGE_CASES)
        if found is None:
            note(f"judge cases: ours only ({upstream.hint()})")
        return {"ours": our_cases(), **({"upstream": found} if found else {})}
    unknown = sorted(set(names) - {"ours", "upstream"})
    if unknown or not names:
        raise ValueError(
            f"unknown judge-case suite(s) {unknown or spec!r}: use {AUTO}, or a comma "
            "list of ours, upstream"
        )
    return {
        n: our_cases() if n == "ours" else upstream.require_upstream(upstream.JUDGE_CASES)
        for n in names
    }
