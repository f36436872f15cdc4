"""Console entry points (the only modules that import Hydra and omegaconf)."""
