"""Language models defined in the project (trainable from scratch on a CPU)."""

from llm_bridge.models.transformer import TinyLM, TinyLMSettings

__all__ = ["TinyLM", "TinyLMSettings"]
