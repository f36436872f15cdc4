"""``mbrl-export``: a board-game checkpoint's network as ONNX, checked with onnxruntime.

mbrl-export checkpoint=runs/chess_sl                 # -> runs/chess_sl/model.onnx (+ .json)
mbrl-export checkpoint=runs/demo/checkpoints/last.ckpt out=tictactoe.onnx
"""

from __future__ import annotations

from mbrl.cli._command import console_main
from mbrl.export import ExportCommandConfig, export

main = console_main("mbrl-export", ExportCommandConfig, "export_command", export)

if __name__ == "__main__":
    main()
