"""Plain ``nn.Module`` networks, built from a game's shapes and the model config."""

from mbrl.networks.alphazero import AlphaZeroNet, PolicyValue

__all__ = ["AlphaZeroNet", "PolicyValue"]
