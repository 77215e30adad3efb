"""tbrl_lib.synth: where training tasks come from when there are not enough of them.

- Procedural families (offline, seeded): `generate(family, n, seed, difficulty)`,
  `make_task(family, seed, difficulty)`, `FAMILIES`; CLI `tbrl tasks generate`.
- The LLM pipeline (proposer -> builder -> validator -> critic, repair rounds, budget,
  resumable state): `pipeline.PipelineConfig`, `pipeline.run_pipeline`, backends in
  `llm` (`make_llm("anthropic:MODEL" | "openai:BASE_URL+MODEL")`).
- Validation at scale on the shared validator: `validation.validate_many`,
  `batch_validate.task_validator`, `python -m tbrl_lib.synth.batch_validate`.
- Near-duplicates and balance: `dedup.near_duplicates`, `dedup.balance_table`.
- Tables, plots, export for the notebook: `report`.
"""

from tbrl_lib.synth.families import FAMILIES
from tbrl_lib.synth.generate import generate, make_task

__all__ = ["FAMILIES", "generate", "make_task"]
