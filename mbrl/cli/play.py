"""``mbrl-play``: play against a checkpoint in the terminal.

mbrl-play checkpoint=runs/tic_tac_toe_alphazero_seed0
mbrl-play checkpoint=runs/connect_four_alphazero_seed0 seat=second simulations=200
"""

from __future__ import annotations

from mbrl.cli._command import console_main
from mbrl.play import PlayConfig, play

main = console_main("mbrl-play", PlayConfig, "play_command", play)

if __name__ == "__main__":
    main()
