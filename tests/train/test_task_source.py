"""Training on a task set of one's own: `--tasks DIR` and `--lenient` are the settings they
stand for, a preset that trains on a procedural family refuses a task folder, strict loading
names `--lenient`, and tasks whose own image does not build are skipped before step 1 with
one line each and a count (`prebuild_images`), end to end on a folder shaped like a public
Harbor set with one broken Dockerfile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbrl_lib.cli.train import task_overrides
from tbrl_lib.overrides import parse_overrides
from tbrl_lib.tasks import load_tasks
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.task_set import prebuild_images, select_tasks

FIXTURES = Path(__file__).resolve().parents[1] / "tasks" / "fixtures" / "third_party"
TB2 = FIXTURES / "tb2"


def _config(overrides: list[str]):
    return load_preset("cpu-smoke", parse_overrides(overrides))


def test_tasks_and_lenient_are_the_settings_they_stand_for(tmp_path):
    odd = tmp_path / "a dir: with yaml [chars]"
    items = task_overrides(odd, True, ["grpo.max_steps=1"])
    config = _config(items)
    data = config.data
    assert data.tasks == str(odd) and data.task_ids == [] and data.lenient
    assert config.grpo.max_steps == 1
    kept = _config(task_overrides(odd, False, ["data.task_ids=[a]"]))
    assert kept.data.task_ids == ["a"] and not kept.data.lenient  # an explicit task_ids stays
    assert task_overrides(None, False, ["grpo.max_steps=1"]) == ["grpo.max_steps=1"]


def test_a_family_preset_refuses_a_task_folder(tbrl):
    result = tbrl("train", "run", "--preset", "cpu-demo", "--tasks", TB2)
    assert result.code == 2 and "procedural families ['write_word']" in result.err, result.err
    assert "--preset cpu-smoke" in result.err


def test_strict_loading_names_the_lenient_mode_and_lenient_reports_each_change(capsys):
    tb1 = str(FIXTURES / "tb1")
    with pytest.raises(ValueError, match="--lenient"):
        select_tasks(_config([f"data.tasks={json.dumps(tb1)}", "data.task_ids=[]"]).data)
    (task,) = select_tasks(_config(task_overrides(Path(tb1), True, [])).data)
    assert task.id == "hello-world"
    printed = capsys.readouterr().out
    assert "loaded 1 task(s), skipped 0, 5 warning(s)" in printed and "test_goodbye_file" in printed


@pytest.mark.docker
@pytest.mark.slow
def test_prebuild_skips_tasks_whose_image_does_not_build(base_image, capsys):
    tasks = load_tasks(TB2, progress=False).tasks
    built, defects = prebuild_images(tasks)
    assert [t.id for t in built] == ["sales-by-region", "word-count-py313"]
    assert list(defects) == ["broken-test-deps"]
    assert "No matching distribution found for iniconfig==9.0.0" in defects["broken-test-deps"]
    out = capsys.readouterr()
    lines = [x for x in (out.out + out.err).splitlines() if "broken-test-deps" in x]
    assert len(lines) == 1 and lines[0].startswith("skipping task broken-test-deps: ")
    assert "1 of 3 tasks skipped" in out.out and "training on 2" in out.out


@pytest.mark.docker
@pytest.mark.slow
def test_one_grpo_step_on_a_public_style_task_set(tmp_path, base_image):
    from tbrl_lib.train.grpo.training import train
    from tbrl_lib.train.report.run_files import rollouts_frame

    out = tmp_path / "run"
    overrides = parse_overrides(
        [
            *task_overrides(TB2, False, []),
            "grpo.max_steps=1",
            "grpo.num_generations=2",
            "grpo.gradient_accumulation_steps=4",
            "rollout.episode.max_tokens_per_turn=16",
            "rollout.episode.max_turns=1",
        ]
    )
    summary = train(load_preset("cpu-smoke", overrides), out)
    assert summary["steps"] == 1 and list(summary["task_defects"]) == ["broken-test-deps"]
    rollouts = rollouts_frame(out)
    assert set(rollouts.task_id) == {"sales-by-region", "word-count-py313"}
    assert not rollouts.infra_error.any()
