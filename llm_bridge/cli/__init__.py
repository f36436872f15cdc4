"""Console entry points of the LLM bridge (Hydra stops here)."""
