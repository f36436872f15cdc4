"""Hydra config groups (a package so that ``pkg://configs`` finds them in any install)."""
