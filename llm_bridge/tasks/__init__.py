"""Tasks with exact verifiers: text prompts, completion formats, solvers and decoding grammars.

`countdown`: reach a target from given numbers with + - * / (Countdown-24 and larger variants).
"""
