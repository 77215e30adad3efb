"""Task statistics: counts, base images, sizes (FROM parsing: test_dockerfile.py)."""

from __future__ import annotations

from tbrl_lib.tasks.stats import stats_tables, task_stats

from .helpers import make_task


def test_counts_and_sizes():
    tasks = [
        make_task(id="a"),
        make_task(id="b", difficulty="hard", category="security", solution=None),
    ]
    stats = task_stats(tasks)
    assert stats.count == 2 and stats.with_solution == 1 and stats.with_weights == 2
    assert stats.by_difficulty == {"easy": 1, "hard": 1}
    assert stats.by_category == {"file-operations": 1, "security": 1}
    assert stats.base_images == {"tbrl/base:trixie": 2}
    assert stats.sizes["test_functions"] == [2, 2] and stats.sizes["env_bytes"] == [2, 2]
    titles = [t.title for t in stats_tables(stats)]
    assert titles == ["2 tasks", "by difficulty", "by category", "by base image", "sizes per task"]


def test_upstream_base_images(upstream_csv):
    from tbrl_lib.tasks import load_tasks

    stats = task_stats(load_tasks(upstream_csv, progress=False).tasks)
    assert stats.base_images["ghcr.io/laude-institute/t-bench/python-3-13:20250620"] == 194
    assert stats.base_images["ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest"] == 128
    assert "flask" not in stats.base_images and "users" not in stats.base_images
