"""``mbrl-decode``: search-augmented (or plain) decoding of a task with a trained LM.

mbrl-decode checkpoint=runs/countdown_pretrain_seed0 method=mcts budget=32
mbrl-decode checkpoint=RUN method=best_of_n budget=16 split=train limit=100
mbrl-decode checkpoint=RUN method=gumbel budget=32 prompts=my_prompts.txt
"""

from __future__ import annotations

from llm_bridge.decode_command import DecodeCommandConfig, run_decode
from mbrl.cli._command import console_main

main = console_main("mbrl-decode", DecodeCommandConfig, "decode_command", run_decode)

if __name__ == "__main__":
    main()
