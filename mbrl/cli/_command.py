"""What every console entry point shares: unknown keys refused, user errors as one line.

Hydra's struct mode refuses a misspelt ``key=value``, but ``+key=value`` adds any key, and
``OmegaConf.to_object`` then drops it silently (``+trainer.max_stepz=5`` trained 2,000 steps).
`check_overrides` looks at the command line before Hydra does and `check_keys` at the composed
config after, so an unknown key fails either way, naming the key and its close matches.

`console_main` builds a command's entry point from its schema and function. `run_command` turns
the errors a person can act on (a bad value, a missing file, an unknown key) into one line on
stderr and exit status 2, and Ctrl-C into one line and status 130; the traceback is shown only
with ``HYDRA_FULL_ERROR=1``, the switch Hydra's own errors use.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
import re
import sys
import typing
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from mbrl.cli._interrupt import interrupts_never_lost

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
TRACEBACK_SWITCH = "HYDRA_FULL_ERROR"

# Exceptions that describe the user's input (values, files), not a defect of the program.
USER_ERRORS = (ValueError, OSError, OmegaConfBaseException)


class UnknownKeyError(ValueError):
    """A config key that the command's schema does not declare."""


def _is_dataclass_type(kind: Any) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


def schema_keys(schema: type, prefix: str = "") -> Iterator[tuple[str, bool]]:
    """Every dotted key of a dataclass schema, with whether its value is a free-form dict
    (``game.params``: any key may be added below it)."""
    hints = typing.get_type_hints(schema)
    for field in dataclasses.fields(schema):
        kind = hints[field.name]
        name = f"{prefix}{field.name}"
        if _is_dataclass_type(kind):
            yield name, False
            yield from schema_keys(kind, f"{name}.")
        else:
            yield name, typing.get_origin(kind) is dict


@functools.cache
def _declared(schema: type) -> dict[str, bool]:
    """`schema_keys` as a dict, walked once per schema."""
    return dict(schema_keys(schema))


def _unknown(key: str, schema: type, groups: Sequence[str]) -> str | None:
    """None if ``key`` is declared (or lies under a free-form dict), else the error message."""
    known = _declared(schema)
    if key in known or key in groups:
        return None
    parts = key.split(".")
    if any(known.get(".".join(parts[:i])) for i in range(1, len(parts))):
        return None  # under a free-form dict such as game.params
    parent = key.rpartition(".")[0]
    siblings = [k for k in [*known, *groups] if k.rpartition(".")[0] == parent]
    leaves = {k.rpartition(".")[2]: k for k in siblings}
    matches = [leaves[m] for m in difflib.get_close_matches(parts[-1], leaves, n=3, cutoff=0.7)]
    hint = f"; did you mean {' or '.join(repr(m) for m in matches)}?" if matches else ""
    return f"unknown config key {key!r}{hint} (--help lists every key)"


def check_overrides(arguments: Sequence[str], schema: type, groups: Sequence[str] = ()) -> None:
    """Refuse command-line overrides of keys the schema does not declare (with or without
    ``+``), before Hydra composes; config groups (``game=...``) and Hydra's own keys pass."""
    for argument in arguments:
        if argument.startswith("-") or "=" not in argument:
            continue  # --help, --cfg job, ... are Hydra's
        key = argument.split("=", 1)[0].lstrip("+~").split("@", 1)[0]
        if not key or "/" in key or key.split(".")[0] == "hydra":
            continue
        message = _unknown(key, schema, groups)
        if message:
            raise UnknownKeyError(message)


class CompositionError(ValueError):
    """An override Hydra cannot apply: an unknown option, a value of the wrong type, bad syntax."""


def check_composition(config_name: str, arguments: Sequence[str]) -> None:
    """Compose the config as Hydra is about to, so that an override it cannot apply is a user
    error here (one line, status 2) instead of Hydra's multi-line report (status 1), which
    happens before any handler of ours runs. Multirun sweeps and Hydra's own keys are left to
    Hydra."""
    if "-m" in arguments or "--multirun" in arguments:
        return
    overrides = [
        argument
        for argument in arguments
        if not argument.startswith("-")
        and ("=" in argument or argument.startswith("~"))
        and not argument.lstrip("+~").startswith("hydra")
    ]
    from hydra import compose, initialize_config_module
    from hydra.errors import HydraException

    try:
        with initialize_config_module(config_module="configs", version_base="1.3"):
            compose(config_name=config_name, overrides=overrides)
    except HydraException as error:
        raise CompositionError(_composition_message(error)) from None


def _composition_message(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    first = re.sub(r"^In '[^']+': ", "", lines[0]) if lines else type(error).__name__
    if "Available options in" in str(error):  # an unknown option of a config group
        start = next(i for i, line in enumerate(lines) if line.startswith("Available options"))
        options = []
        for line in lines[start + 1 :]:
            if line.startswith("Config search path"):
                break
            options.append(line)
        group = lines[start].removeprefix("Available options in ").rstrip(":")
        return f"{first.split(': ', 1)[-1]}; the options in {group} are {', '.join(options)}"
    if first.startswith("LexerNoViableAltException") or type(error).__name__ == (
        "OverrideParseException"
    ):
        override = first.split(": ", 1)[-1]
        return (
            f"cannot parse the override {override} (a value with quotes or spaces needs "
            "quoting: see https://hydra.cc/docs/advanced/override_grammar/basic)"
        )
    if error.__cause__ is not None:  # "Error merging override k=v" from OmegaConf's reason
        reason = str(error.__cause__).strip().splitlines()[0]
        return f"{first.removeprefix('Error merging override ')}: {reason}"
    return first


def check_keys(cfg: DictConfig, schema: type) -> None:
    """Refuse keys in the composed config that the schema does not declare."""
    for key in _leaf_keys(OmegaConf.to_container(cfg, resolve=False)):
        message = _unknown(key, schema, ())
        if message:
            raise UnknownKeyError(message)


def _leaf_keys(tree: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            name = f"{prefix}{key}"
            yield name
            yield from _leaf_keys(value, f"{name}.")


def config_groups(package: str = "configs") -> list[str]:
    """The config group names of ``package`` (its sub-directories)."""
    from importlib.resources import files

    return sorted(p.name for p in files(package).iterdir() if p.is_dir() and p.name[0] != "_")


def to_object(cfg: DictConfig, schema: type) -> Any:
    """The composed config as its dataclass, after refusing undeclared keys."""
    check_keys(cfg, schema)
    return OmegaConf.to_object(cfg)


def describe(error: BaseException) -> str:
    """One line for a user error (OmegaConf's messages span several lines)."""
    if isinstance(error, MissingMandatoryValue):
        key = getattr(error, "full_key", None) or "a key"
        return f"{key} is required (add {key}=...)"
    if isinstance(error, OSError) and error.strerror and error.filename:
        return f"{error.strerror}: {error.filename}"  # raised by the OS, not by us
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    return lines[0] if isinstance(error, OmegaConfBaseException) else " ".join(lines)


def console_main(
    app: str, schema: type, config_name: str, run: Callable[[Any], Any]
) -> Callable[[], None]:
    """The console entry point of a command whose config is ``schema`` (registered with Hydra as
    ``<config_name>_schema``): overrides checked, composed, ``run(config object)`` with user
    errors as one line."""
    import hydra
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name=f"{config_name}_schema", node=schema)

    @hydra.main(version_base="1.3", config_path="pkg://configs", config_name=config_name)
    def compose_and_run(cfg: DictConfig) -> None:
        run_command(app, lambda: run(to_object(cfg, schema)))

    def main() -> None:
        run_command(app, lambda: check_overrides(sys.argv[1:], schema))
        run_command(app, lambda: check_composition(config_name, sys.argv[1:]))
        compose_and_run()

    return main


def run_command(app: str, function: Callable[[], Any]) -> Any:
    """Runs ``function``; a user error or Ctrl-C becomes one line on stderr and an exit."""
    with interrupts_never_lost():
        return _run(app, function)


def _run(app: str, function: Callable[[], Any]) -> Any:
    if os.environ.get(TRACEBACK_SWITCH) == "1":
        return function()
    try:
        return function()
    except KeyboardInterrupt:
        print(f"{app}: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except USER_ERRORS as error:
        print(f"{app}: error: {describe(error)}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
