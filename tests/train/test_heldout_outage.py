"""An engine outage during the held-out evaluation inside training stops the run as a training
outage does: `tbrl train` lines and one stop naming the evaluation and the resume command,
never evaluation's "rerun the same command". The outage is real: DOCKER_HOST names a socket
no engine listens on, so the image build fails, the harness waits, and the wait runs out."""

from __future__ import annotations

import pytest
from transformers import TrainerState, TrainingArguments

from tbrl_lib.docker import engine
from tbrl_lib.models import make_policy
from tbrl_lib.sandbox import DockerHost
from tbrl_lib.sandbox.backends.docker.hosts import get_host
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.heldout.evaluator import HeldoutDuringTraining, HeldoutEvaluator
from tbrl_lib.train.plan.resume import write_state


@pytest.fixture
def evaluator(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    default = get_host(DockerHost())
    default.close()  # the process's client of the default engine reconnects: to DOCKER_HOST
    settings = {
        "heldout.instances": 2,
        "data.families": ["write_word"],
        "rollout.sandbox.engine_wait_s": 0.3,
    }
    config = load_preset("cpu-smoke", settings)
    rollout = config.rollout.for_run("heldout-outage")
    heldout = HeldoutEvaluator.for_run(config, rollout, tmp_path / "eval", tmp_path)
    assert heldout is not None
    yield heldout
    default.close()  # later tests reconnect to the real engine


def _step(evaluator: HeldoutEvaluator, step: int):
    callback = HeldoutDuringTraining(evaluator, make_policy("noop"), every=2, sink={})
    state = TrainerState(global_step=step, max_steps=4)
    args = TrainingArguments(output_dir=str(evaluator.out), report_to=[])
    return callback.on_step_end(args, state, None)


def test_an_outage_in_the_heldout_evaluation_stops_with_the_training_resume(
    evaluator, tmp_path, capsys
):
    with pytest.raises(engine.EngineOutage) as info:
        _step(evaluator, 2)
    message = str(info.value)
    assert "did not come back within 0s" in message
    assert "training stopped in the held-out evaluation step-00002" in message
    assert f"no checkpoint is saved in {tmp_path} yet: start the run again" in message
    assert "rerun the same command" not in message
    said = capsys.readouterr()
    lines = (said.out + said.err).splitlines()
    assert any(line.startswith("tbrl train: the Docker engine") for line in lines)
    assert not any("tbrl eval" in line for line in lines)

    (tmp_path / "checkpoints" / "checkpoint-2").mkdir(parents=True)
    write_state(tmp_path / "checkpoints" / "checkpoint-2", {"step": 2})
    with pytest.raises(engine.EngineOutage) as info:
        _step(evaluator, 4)
    message = str(info.value)
    assert "held-out evaluation step-00004; the checkpoints are kept; resume with: " in message
    assert "tbrl train run --preset cpu-smoke --set" in message
    assert message.endswith(f"--out {tmp_path} --resume latest")


def test_an_evaluator_outside_training_keeps_evaluations_wording(evaluator):
    evaluator.outage = None
    with pytest.raises(engine.EngineOutage, match="rerun the same command to resume"):
        _step(evaluator, 2)
