"""``HFAdapter``: a Hugging Face causal LM, loaded from a local directory, behind `LMAdapter`.

Siblings in a decoding tree fork the same parent, so the adapter keeps each state's keys and
values (a `llm_bridge.kv_cache.KVCache`) and a child only runs its new tokens through the model:
one ``extend`` call is one forward for all its rows, whatever the parents' lengths (the layout
and why it is exact are in `llm_bridge.kv_cache`).

The cache layout assumes full-attention layers (GPT-2, Llama-style models); it is tested with
GPT-2. Nothing is downloaded: ``from_directory`` reads ``local_files_only``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, DynamicCache

from llm_bridge.adapter import (
    LMAdapter,
    LMOutput,
    LMState,
    check_overflow,
    continuation_log_probs,
)
from llm_bridge.kv_cache import KVCache, cached_children, left_padded, prompt_states
from llm_bridge.transformer_adapter import pad_right
from mbrl.checkpoint import load_safely

CONFIG_FILE = "config.json"
# Any one of these holds the weights (the index files name the shards of a sharded checkpoint).
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
VALUE_HEAD_FILE = "value_head.pt"


def check_model_directory(directory: str | Path) -> Path:
    """``directory`` as a Path if it holds a config and weights; otherwise a FileNotFoundError
    naming what is missing."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"model directory {str(directory)!r} does not exist")
    missing = []
    if not (directory / CONFIG_FILE).is_file():
        missing.append(CONFIG_FILE)
    if not any((directory / name).is_file() for name in WEIGHT_FILES):
        missing.append("weights (one of " + ", ".join(WEIGHT_FILES) + ")")
    if missing:
        raise FileNotFoundError(
            f"model directory {str(directory)!r} is missing {' and '.join(missing)}; save the "
            "model there with model.save_pretrained(directory)"
        )
    return directory


class HFAdapter(LMAdapter):
    """A causal LM with an optional value head and a KV cache shared along tree branches.

    model: a transformers causal LM (``model(input_ids, attention_mask, position_ids, ...)``).
    value_head: ``Linear(hidden_size, 1)`` read on the last hidden state and squashed by a
      sigmoid; ``None`` gives value 0.
    max_length: the context in tokens; default the config's ``n_positions`` or
      ``max_position_embeddings``.
    overflow: a prompt longer than the context: "error" or "truncate_left".
    use_cache: keep KV caches on states (``False``: every call recomputes whole sequences).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        value_head: torch.nn.Module | None = None,
        max_length: int | None = None,
        overflow: str = "error",
        use_cache: bool = True,
        tokenizer=None,
    ) -> None:
        super().__init__()
        config = model.config.get_text_config()
        self.model = model.eval()
        self.value_head = None if value_head is None else value_head.eval()
        self.tokenizer = tokenizer
        self.overflow = check_overflow(overflow)
        self.use_cache = use_cache
        self.vocab_size = int(config.vocab_size)
        self.eos_id = _eos_id(config)
        self.max_length = _context_length(config, max_length)
        self.device = next(model.parameters()).device
        # transformers 5 renamed ``past_key_values`` to ``cache``.
        parameters = inspect.signature(model.forward).parameters
        self._cache_argument = "cache" if "cache" in parameters else "past_key_values"

    @classmethod
    def from_directory(
        cls,
        path: str | Path,
        *,
        max_length: int | None = None,
        overflow: str = "error",
        device: str | torch.device = "cpu",
        use_cache: bool = True,
        value_head: bool = True,
        dtype: torch.dtype = torch.float32,
    ) -> HFAdapter:
        """Load ``path`` (config.json + weights, optional tokenizer and ``value_head.pt``).

        value_head: load ``value_head.pt`` if present, else a fresh ``Linear(hidden_size, 1)``
        drawn from torch's global RNG; ``False``: no value head (value 0).
        """
        directory = check_model_directory(path)
        model = AutoModelForCausalLM.from_pretrained(directory, local_files_only=True, dtype=dtype)
        model = model.to(device)
        head = None
        if value_head:
            hidden_size = model.config.get_text_config().hidden_size
            head = torch.nn.Linear(hidden_size, 1)
            head_file = directory / VALUE_HEAD_FILE
            if head_file.is_file():
                head.load_state_dict(load_safely(head_file))
            head = head.to(device=device, dtype=dtype)
        tokenizer = None
        if any((directory / name).is_file() for name in TOKENIZER_FILES):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
        return cls(
            model,
            value_head=head,
            max_length=max_length,
            overflow=overflow,
            use_cache=use_cache,
            tokenizer=tokenizer,
        )

    def save(self, directory: str | Path) -> None:
        """Write the model (and the value head as ``value_head.pt``) for ``from_directory``."""
        directory = Path(directory)
        self.model.save_pretrained(directory)
        if self.value_head is not None:
            torch.save(self.value_head.state_dict(), directory / VALUE_HEAD_FILE)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(directory)

    # -- recompute ---------------------------------------------------------------------------

    def _evaluate(self, sequences: Sequence[Sequence[int]]) -> LMOutput:
        if not sequences:
            return self._empty_output()
        return self._forward_right_padded(sequences, use_cache=False)[0]

    @torch.inference_mode()
    def _forward_right_padded(self, sequences: Sequence[Sequence[int]], *, use_cache: bool):
        """Whole sequences, right-padded: real tokens never attend to the padding after them,
        so their logits and keys/values are exactly those of an unpadded run."""
        if any(len(ids) == 0 for ids in sequences):
            raise ValueError("cannot evaluate an empty sequence: give every prompt a token")
        for ids in sequences:
            self._check_token_ids(ids)
        input_ids, lengths = pad_right(sequences, pad_id=0)  # [B, T], [B]
        rows, width = input_ids.shape
        attention_mask = (torch.arange(width) < lengths[:, None]).long()
        last = lengths - 1  # [B] each row's last real position
        position_ids = torch.arange(width).expand(rows, width)
        cache = DynamicCache() if use_cache else None
        output = self._run(input_ids, attention_mask, position_ids, last[:, None], cache)
        return output, cache

    # -- KV cache ----------------------------------------------------------------------------

    def start(self, prompts: Sequence[Sequence[int]]) -> tuple[list[LMState], LMOutput]:
        if not self.use_cache:
            return super().start(prompts)
        prompts = [self.fit(prompt) for prompt in prompts]
        if not prompts:
            return [], self._empty_output()
        self.forward_passes += len(prompts)
        output, cache = self._forward_right_padded(prompts, use_cache=True)
        return prompt_states(prompts, _stack_layers(cache)), output

    def extend(
        self, parents: Sequence[LMState], tokens: Sequence[Sequence[int]]
    ) -> tuple[list[LMState], LMOutput]:
        if not self.use_cache:
            return super().extend(parents, tokens)
        tokens = [list(new) for new in tokens]
        if len(parents) != len(tokens):
            raise ValueError(f"got {len(parents)} parents but {len(tokens)} token lists")
        for parent, new in zip(parents, tokens, strict=True):
            self._check_child(parent, new)
        if not parents:
            return [], self._empty_output()
        self.forward_passes += len(parents)
        output, new_kv = self._forward_cached(parents, tokens)  # new_kv: [L, 2, B, H, N, D]
        return cached_children(parents, tokens, new_kv), output

    @torch.inference_mode()
    def _score(self, prefixes, continuations) -> LMOutput:
        """Teacher-forced log-probability of each continuation after its prefix: one forward
        over the right-padded concatenations (step proposals are scored whole, no cache)."""
        if not continuations:
            return LMOutput(torch.zeros(0), torch.zeros(0))
        sequences = [[*p, *c] for p, c in zip(prefixes, continuations, strict=True)]
        for ids in sequences:
            self._check_token_ids(ids)
        input_ids, lengths = pad_right(sequences, pad_id=0)
        attention_mask = (torch.arange(input_ids.shape[1]) < lengths[:, None]).long()
        result = self.model(
            input_ids=input_ids.to(self.device),
            attention_mask=attention_mask.to(self.device),
            output_hidden_states=self.value_head is not None,
        )
        log_probs = torch.log_softmax(result.logits.float(), -1)
        scores = continuation_log_probs(log_probs, prefixes, continuations)
        if self.value_head is None:
            return LMOutput(scores, torch.zeros(len(sequences)))
        rows = torch.arange(len(sequences), device=self.device)
        hidden = result.hidden_states[-1][rows, (lengths - 1).to(self.device)]
        return LMOutput(scores, torch.sigmoid(self.value_head(hidden)).squeeze(-1).float().cpu())

    def _empty_output(self) -> LMOutput:
        return LMOutput(torch.zeros(0, self.vocab_size), torch.zeros(0))

    def _check_token_ids(self, ids: Sequence[int]) -> None:
        if min(ids) < 0 or max(ids) >= self.vocab_size:
            raise ValueError(
                f"token ids must be in [0, {self.vocab_size}), got {min(ids)}..{max(ids)}"
            )

    def _check_child(self, parent: LMState, new: Sequence[int]) -> None:
        if not new:
            raise ValueError("each child needs at least one new token, got an empty list")
        self._check_token_ids(new)
        if not isinstance(parent.cache, KVCache):
            raise ValueError(
                "parent state has no KV cache (released, or made by another adapter or with "
                "use_cache=False); extend only live states from this adapter's start/extend"
            )
        if len(parent.ids) + len(new) > self.max_length:
            raise ValueError(
                f"child of {len(parent.ids) + len(new)} tokens ({len(parent.ids)} + "
                f"{len(new)} new) exceeds the model's context of {self.max_length}; stop "
                "extending this branch (e.g. treat it as terminal)"
            )

    @torch.inference_mode()
    def _forward_cached(self, parents: Sequence[LMState], tokens: Sequence[Sequence[int]]):
        """One forward for all rows, laid out as `kv_cache.CachedBatch` says. Returns the output
        and the new tokens' keys/values ``[L, 2, B, H, N, D]``."""
        batch = left_padded(parents, tokens)
        past_width = batch.past.shape[-2]
        cache = DynamicCache(
            [(batch.past[layer, 0], batch.past[layer, 1]) for layer in range(batch.past.shape[0])]
        )
        last = torch.full((len(parents), 1), batch.input_ids.shape[1] - 1)
        output = self._run(batch.input_ids, batch.key_mask.long(), batch.positions, last, cache)
        return output, _stack_layers(cache, start=past_width)

    def _run(self, input_ids, attention_mask, position_ids, last, cache) -> LMOutput:
        """The model on ``input_ids [B, T]``; logits and value at column ``last [B, 1]``."""
        device = self.device
        kwargs = {self._cache_argument: cache} if cache is not None else {}
        result = self.model(
            input_ids=input_ids.to(device),
            attention_mask=attention_mask.to(device),
            position_ids=position_ids.to(device),
            use_cache=cache is not None,
            logits_to_keep=last.to(device),  # the lm head only at each row's last token
            output_hidden_states=self.value_head is not None,
            **kwargs,
        )
        logits = result.logits[:, -1].float().cpu()  # [B, V]
        if self.value_head is None:
            value = torch.zeros(len(input_ids))
        else:
            hidden = result.hidden_states[-1]  # [B, T, hidden], after the final norm
            hidden = hidden.gather(1, last.to(device)[:, :, None].expand(-1, -1, hidden.shape[-1]))
            value = torch.sigmoid(self.value_head(hidden[:, 0])).squeeze(-1).float().cpu()
        return LMOutput(logits, value)


def _stack_layers(cache, start: int = 0) -> torch.Tensor:
    """A DynamicCache's keys and values from column ``start`` on, ``[L, 2, B, H, T, D]``."""
    if hasattr(cache, "layers"):
        pairs = [(layer.keys, layer.values) for layer in cache.layers]
    else:  # transformers < 4.56
        pairs = list(zip(cache.key_cache, cache.value_cache, strict=True))
    return torch.stack([torch.stack((k[:, :, start:], v[:, :, start:])) for k, v in pairs])


def _eos_id(config) -> int:
    eos = config.eos_token_id
    if isinstance(eos, (list, tuple)):
        eos = eos[0] if eos else None
    if eos is None or not 0 <= eos < config.vocab_size:
        raise ValueError(
            f"config.eos_token_id must be a token id below vocab_size={config.vocab_size}, got "
            f"{config.eos_token_id!r}; set eos_token_id in config.json"
        )
    return int(eos)


def _context_length(config, max_length: int | None) -> int:
    model_context = getattr(config, "n_positions", None) or getattr(
        config, "max_position_embeddings", None
    )
    if max_length is None:
        if model_context is None:
            raise ValueError("the config states no context length; pass max_length")
        return int(model_context)
    if max_length < 1 or (model_context is not None and max_length > model_context):
        raise ValueError(
            f"max_length must be between 1 and the model's context of {model_context}, "
            f"got {max_length}"
        )
    return int(max_length)
