"""tbrl_lib.synth: where training tasks come from when there are not enough of them.

A task source, like the format readers: it knows `Task`s and nothing above them (no agent,
no sandbox, no evaluation); whoever runs its tasks imports it, never the other way round.

- Procedural families (offline, seeded): `generate(family, n, seed, difficulty)`,
  `make_task(family, seed, difficulty)`, `FAMILIES`; CLI `tbrl tasks generate`.
- The LLM pipeline (proposer -> builder -> validator -> critic, repair rounds, budget,
  resumable state): `pipeline.PipelineConfig`, `pipeline.run_pipeline`, backends in
  `llm` (`make_llm("anthropic:MODEL" | "openai:BASE_URL+MODEL")`).
- Validation at scale runs the agent in sandboxes, so it lives above synthesis:
  `tbrl_lib.evaluate.batch_validate` (`validate_many`, `task_validator` for the pipeline).
- Near-duplicates and balance: `dedup.near_duplicates`, `dedup.balance_table`.
- Tables, plots, export for the notebook: `report`.
"""

from tbrl_lib.synth.families import FAMILIES
from tbrl_lib.synth.generate import generate, make_task

__all__ = ["FAMILIES", "generate", "make_task"]
