"""Judge-case loading: the upstream six read in place (when given), ours, which suites a
run uses, and clear errors for bad input."""

from __future__ import annotations

import json

import pytest

from tbrl_lib import upstream
from tbrl_lib.judge_eval import CaseFormatError, load_cases, our_cases, suite_dirs
from tbrl_lib.rewards.judges.prompt import CAPS, RUBRIC_WEIGHTS


def test_upstream_cases_load_in_place(upstream_judge_cases):
    cases = load_cases(upstream_judge_cases).cases
    assert len(cases) == 6 and {c.id for c in cases} >= {"perfect_agent", "no_exploration"}
    perfect = next(c for c in cases if c.id == "perfect_agent")
    assert perfect.expected_range == (0.9, 1.0) and perfect.messages[0]["role"] == "user"
    assert "FROM" in perfect.dockerfile and perfect.judge_input().instruction.startswith("The venv")


def test_our_cases_cover_every_rubric_item_and_include_real_episodes():
    cases = load_cases(our_cases()).cases
    assert len(cases) >= 12
    covered = {item for c in cases for item in c.rubric}
    assert set(RUBRIC_WEIGHTS) <= covered | {"efficiency"} and "gaming" in covered
    assert "efficiency" in covered
    episodes = [c for c in cases if c.source.startswith("episode:")]
    assert len(episodes) >= 5, "several cases must come from real episodes of our agent"
    assert (
        set(CAPS)
        - {
            "no_todo",
            "change_before_exploration",
            "no_verification",
            "parse_errors",
            "overthinking",
            "flailing",
            "gaming",
        }
        == set()
    )


def _write(root, entries, messages=None):
    root.mkdir(exist_ok=True)
    (root / "cases.yaml").write_text(json.dumps({"cases": entries}))
    for entry in entries:
        d = root / str(entry.get("id"))
        d.mkdir(exist_ok=True)
        (d / "messages.json").write_text(
            json.dumps(messages if messages is not None else [{"role": "user", "content": "t"}])
        )
        (d / "dockerfile").write_text("FROM x\n")


@pytest.mark.parametrize(
    "entries,messages,match",
    [
        ([{"id": "a", "expected_range": [0.5, 0.2]}], None, "0 <= lo <= hi <= 1"),
        ([{"id": "a", "expected_range": [0.1]}], None, "expected_range"),
        (
            [{"id": "a", "expected_range": [0, 1]}, {"id": "a", "expected_range": [0, 1]}],
            None,
            "duplicate id",
        ),
        (
            [{"id": "a", "expected_range": [0, 1]}],
            [{"role": "robot", "content": "x"}],
            "bad entries",
        ),
        ([{"expected_range": [0, 1]}], None, "needs an `id`"),
        (
            [{"id": "a", "expected_range": [0, 1], "at_most": {"case": "b", "ratio": 0.5}}],
            None,
            "names 'b', which is not another case",
        ),
        (
            [
                {"id": "a", "expected_range": [0, 1], "at_most": {"case": "b", "ratio": 2}},
                {"id": "b", "expected_range": [0, 1]},
            ],
            None,
            "0 < R <= 1",
        ),
    ],
)
def test_bad_cases_name_the_file_and_field(tmp_path, entries, messages, match):
    _write(tmp_path / "c", entries, messages)
    with pytest.raises(CaseFormatError, match=match):
        load_cases(tmp_path / "c")


def test_relative_labels_are_read_and_checked(tmp_path):
    from tbrl_lib.judge_eval.cases import relative_labels

    _write(
        tmp_path / "c",
        [
            {
                "id": "theatre",
                "expected_range": [0, 0.2],
                "at_most": {"case": "real", "ratio": 0.5},
            },
            {"id": "real", "expected_range": [0.7, 1]},
        ],
    )
    cases = load_cases(tmp_path / "c").cases
    assert cases[0].at_most == ("real", 0.5) and cases[1].at_most is None
    (held,) = relative_labels(cases, {"theatre": 0.4, "real": 0.8})
    assert held["holds"] and held["at_most"] == "0.5 x real"
    assert not relative_labels(cases, {"theatre": 0.41, "real": 0.8})[0]["holds"]
    assert relative_labels(cases, {"theatre": 0.4}) == [], "no score for the other case: left out"


def test_missing_files_are_named(tmp_path):
    with pytest.raises(CaseFormatError, match="cases.yaml"):
        load_cases(tmp_path)
    _write(tmp_path / "c", [{"id": "a", "expected_range": [0, 1]}])
    (tmp_path / "c" / "a" / "dockerfile").unlink()
    with pytest.raises(CaseFormatError, match="dockerfile is missing"):
        load_cases(tmp_path / "c")


@pytest.fixture
def no_upstream(monkeypatch, tmp_path):
    """A bare clone: no TBRL_UPSTREAM_DIR and an empty data/upstream."""
    monkeypatch.delenv(upstream.ENV_VAR, raising=False)
    monkeypatch.setattr(upstream, "default_dir", lambda: tmp_path / "absent")


def test_auto_suites_in_a_bare_clone_are_ours_and_say_how_to_add_upstream(no_upstream):
    notes = []
    assert suite_dirs("auto", note=notes.append) == {"ours": our_cases()}
    assert len(notes) == 1 and "tbrl upstream fetch" in notes[0] and upstream.ENV_VAR in notes[0]


def test_asked_for_upstream_suite_that_is_absent_is_an_error(no_upstream):
    with pytest.raises(upstream.UpstreamMissing, match="tbrl upstream fetch"):
        suite_dirs("ours,upstream")


def test_auto_suites_add_upstream_when_the_variable_names_it(monkeypatch, tmp_path):
    (tmp_path / "judge_cases").mkdir()
    monkeypatch.setenv(upstream.ENV_VAR, str(tmp_path))
    notes = []
    found = suite_dirs("auto", note=notes.append)
    assert found == {"ours": our_cases(), "upstream": tmp_path / "judge_cases"}
    assert notes == []


def test_unknown_suite_names_the_choices():
    with pytest.raises(ValueError, match="ours, upstream"):
        suite_dirs("theirs")
