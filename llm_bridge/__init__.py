"""Language models as just another game: decoding as a searchable MDP on `search/`, and
training on the search's results through `mbrl`'s System.

- `adapter.LMAdapter`: batched evaluation (next-token logits over the vocabulary, value) with
  start / extend / release cache hooks and a forward-pass counter; backends
  `transformer_adapter.TransformerAdapter` (the project's `models.TinyLM`) and
  `hf_adapter.HFAdapter` (a local Hugging Face causal LM, KV cache shared by siblings).
- `text_env.TextEnv`: token-level actions (top-k grammar-allowed tokens, padded to a fixed
  width) with the task's verifier as the terminal reward; `step_env.StepTextEnv`: whole steps
  from a task's fixed action set, scored by the LM.
- `decoding`: greedy, sample, best-of-N, beam, MCTS and Gumbel MuZero search, batched across
  prompts, every method counted in forward passes.
- `tasks/`: Countdown-24 and general Countdown (solver, split, grammar); `verifiers`: exact
  checkers (arithmetic, Python unit tests judged outside a sandboxed process) usable as
  TRL-style rewards.
- Training: `examples` (one batch layout), `objectives` (distillation / SFT, GRPO), `rounds`
  (each method's data), `fitting`, `train_text` (the rounds behind ``mbrl-train``),
  `decode_command` (``mbrl-decode``); `config` (the ``llm`` group).

Importing the package registers the ``text`` game kind and the LM algorithms with the core
(`mbrl.registry`).
"""

from llm_bridge.config import LM_ALGORITHMS
from mbrl.registry import register_algorithm, register_game_kind

register_game_kind("text", "language-model tasks")
for _name in LM_ALGORITHMS:
    register_algorithm(_name, game_kinds=("text",), train="llm_bridge.train_text:train_text")
