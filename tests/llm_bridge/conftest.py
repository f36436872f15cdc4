"""Shared fixtures: a tiny seeded TinyLM on Countdown-24 behind a TextEnv."""

import pytest
import torch

from llm_bridge.models import TinyLM, TinyLMSettings
from llm_bridge.tasks.text_tasks import make_task
from llm_bridge.text_env import TextEnv
from llm_bridge.tokenizer import CharTokenizer
from llm_bridge.transformer_adapter import TransformerAdapter


@pytest.fixture(scope="session")
def countdown():
    return make_task("countdown24")


@pytest.fixture
def tokenizer():
    return CharTokenizer()


@pytest.fixture
def tiny_model(tokenizer):
    torch.manual_seed(0)
    return TinyLM(TinyLMSettings(tokenizer.vocab_size, context=64, layers=1, heads=2, width=16))


@pytest.fixture
def env(tiny_model, tokenizer, countdown):
    adapter = TransformerAdapter(tiny_model, eos_id=tokenizer.eos_id)
    return TextEnv(adapter, tokenizer, countdown.task, width=8, max_new_tokens=40)
