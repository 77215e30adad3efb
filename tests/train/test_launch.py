"""Accelerate configs and launch commands for the presets."""

from __future__ import annotations

import yaml

from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.plan.launch import accelerate_config, launch_commands, write_accelerate_config


def test_32xh100_is_a_three_node_zero3_job_with_a_vllm_server(tmp_path):
    config = load_preset("32xh100")
    acc = yaml.safe_load(write_accelerate_config(config, tmp_path / "acc.yaml").read_text())
    assert acc["distributed_type"] == "DEEPSPEED" and acc["deepspeed_config"]["zero_stage"] == 3
    assert (acc["num_machines"], acc["num_processes"]) == (3, 24)
    assert acc["main_process_port"] == 29500 and acc["mixed_precision"] == "bf16"
    commands = launch_commands(config, "acc.yaml")
    assert (
        "--tensor-parallel-size 8" in commands["vllm_server"]
        and "Qwen/Qwen3-32B" in commands["vllm_server"]
    )
    assert commands["train"].startswith(
        "accelerate launch --config_file acc.yaml --machine_rank $MACHINE_RANK --main_process_ip $MAIN_IP"
    )


def test_fsdp2_and_single_process_configs():
    fsdp = accelerate_config(load_preset("8xh100", {"launch.distributed": "fsdp2"}))
    assert fsdp["distributed_type"] == "FSDP" and fsdp["fsdp_config"]["fsdp_version"] == 2
    assert "main_process_port" not in fsdp  # one node: no rendezvous
    smoke = load_preset("cpu-smoke")
    assert accelerate_config(smoke)["use_cpu"] is True
    assert launch_commands(smoke) == {
        "train": "tbrl train run --preset cpu-smoke --out outputs/train"
    }


def test_async_server_presets_take_fsdp2_instead_of_zero3():
    # TRL's server sync gathers FSDP2 shards as it does ZeRO-3's: --set launch.distributed=fsdp2
    for name in ("8xh100-async", "16xh100-async", "32xh100-async"):
        config = load_preset(name, {"launch.distributed": "fsdp2"})
        acc = accelerate_config(config)
        assert acc["distributed_type"] == "FSDP" and acc["fsdp_config"]["fsdp_version"] == 2
        assert acc["num_processes"] == config.launch.num_processes
        assert "vllm_server" in launch_commands(config)
