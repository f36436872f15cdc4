"""A character-level tokenizer for the project's own small language model.

Ids 0-2 are the specials ``<pad>``, ``<bos>`` and ``<eos>``; every other id is one character of
``alphabet``. Countdown needs only digits, the four operators and a little punctuation, so a
character vocabulary keeps the model tiny and the grammar mask exact (one token = one character).
"""

from __future__ import annotations

from collections.abc import Iterable

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
SPECIALS = (PAD, BOS, EOS)
COUNTDOWN_ALPHABET = "0123456789+-*/|=,>: "


class CharTokenizer:
    """``encode(text) -> list[int]`` and back; the specials are never produced by ``encode``."""

    pad_id, bos_id, eos_id = 0, 1, 2

    def __init__(self, alphabet: str = COUNTDOWN_ALPHABET):
        if len(set(alphabet)) != len(alphabet):
            raise ValueError(f"tokenizer alphabet has repeated characters: {alphabet!r}")
        self.alphabet = alphabet
        self.tokens = (*SPECIALS, *alphabet)
        self._ids = {token: i for i, token in enumerate(self.tokens)}

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        try:
            return [self._ids[char] for char in text]
        except KeyError as error:
            raise ValueError(
                f"character {error.args[0]!r} in {text!r} is not in the tokenizer's alphabet "
                f"{self.alphabet!r}"
            ) from None

    def token_id(self, token: str) -> int:
        """The id of one character or special (``"<eos>"``)."""
        if token not in self._ids:
            raise ValueError(f"unknown token {token!r}; known: {self.tokens}")
        return self._ids[token]

    def decode(self, ids: Iterable[int]) -> str:
        """Characters of ``ids``, stopping at ``<eos>`` and skipping ``<pad>``/``<bos>``."""
        chars = []
        for i in ids:
            if i == self.eos_id:
                break
            if i > self.eos_id:
                chars.append(self.tokens[i])
        return "".join(chars)
