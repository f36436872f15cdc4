"""Atari 2600 games (Gymnasium + ale-py) behind the framework's game protocol.

The preprocessing is EfficientZero's Atari-100k protocol (the DQN-lineage wrappers of
NoopReset, MaxAndSkip, EpisodicLife, ClipReward and FrameStack), each property one field of
``AtariSettings``:

- ``frame_skip`` raw frames per agent step (4), the action repeated on each, rewards summed; the
  observation is the pixel-wise max of the last two raw frames of the step (flicker removal).
- ``repeat_action_probability`` (sticky actions) is set on the ALE itself: 0.0 (off) by default,
  0.25 for the Machado et al. (2018) variant.
- ``noop_max``: a real new game starts with 1..``noop_max`` raw no-op frames (30), drawn from the
  slot's seeded generator. The reset observation is the last raw frame (nothing to pool).
- Frames are resized to ``resolution`` x ``resolution`` (96) with ``cv2.INTER_AREA``, RGB by
  default (``grayscale=True`` uses the ALE's own luminance screen).
- ``frame_stack`` (4) processed frames are stacked, **oldest first**, channels first: the
  observation is ``uint8 [frame_stack * channels, H, W]``, e.g. ``(12, 96, 96)`` for RGB with the
  newest frame's R, G, B planes last. uint8 keeps replay storage compact; networks scale to [0, 1].
  After every reset (a new game or a new life) the stack holds the reset frame ``frame_stack`` times.
- ``max_episode_frames`` (108 000 raw frames, 30 minutes, 27 000 agent steps) truncates a game. The
  cap is the ALE's own ``max_num_frames_per_episode``: it counts the emulator's episode frames,
  no-op frames included, and a step that reaches it is cut short there (``truncated``).
- Training only (``training=True``): a lost life is ``terminated`` (``terminal_on_life_loss``) and
  rewards are clipped to their sign (``clip_rewards``). ``settings.evaluation()`` gives the same
  settings with both off: real game over only and raw game score. Raw rewards are always kept.

Life loss works as the EpisodicLife wrapper: the step that loses a life (without ending the game)
reports ``terminated``; resetting that slot does **not** reset the emulator but plays one no-op
agent step and continues the same game (lives keep decreasing, the frame counter keeps running).
Only a real game over, or truncation, makes the next reset start a new game.

Reset semantics (no auto-reset, the same as ``BoardGameEnv``): a slot whose episode ended stays
ended, ignores its actions (reward 0) and keeps returning its final observation with
``terminated``/``truncated`` until ``reset(indices=...)`` is called for it, so a self-play actor
stores the final step and then calls ``env.reset(indices=np.flatnonzero(step.done))``. Per slot the
env keeps ``game_over`` (the real game ended: score it), ``episode_return`` (raw, unclipped score of
the current real game, across lives), ``episode_steps`` (agent steps of the real game),
``raw_reward`` (the last step's unclipped reward), ``lives`` and ``episode_frames`` (the ALE's
episode frame numbers).

``TimeStep`` fields: ``legal`` is all True (every action of the minimal, or full, action set is
always legal); ``to_play`` is 0 (one player) and -1 where the episode terminated, as the protocol
asks; ``reward`` is float32 (clipped in training).

The emulators: one ``ale_py.ALEInterface`` per slot, configured exactly as
``gymnasium.make(settings.env_id, frameskip=1, repeat_action_probability=...,
full_action_space=..., max_num_frames_per_episode=...)`` configures its own (the tests check the
rewards against that env), but driven directly: one ROM load per slot instead of two (the ALE
takes its seed when the ROM loads) and no per-frame screen copy as in the env's ``step``. The
emulators are public as ``AtariEnv.ales`` so tests and tools can read them back.

Why not Gymnasium's ``AtariPreprocessing``: its ``reset`` always resets the emulator (a life loss
would restart the game), on life loss it stops the frame skip early and returns stale pooled frames,
and it has no frame stack (channels last besides).

Why not ``ale_py.AtariVectorEnv`` as a fast path: its ``reward_clipping`` discards the raw reward
(no unclipped score in training), it never exposes the per-game ``ALEInterface`` (the frame skip,
max-pool and sticky-action properties cannot be asserted on the emulator), its resize is its own
(not ``INTER_AREA`` on the pooled RGB frame), it stacks channels last and it presses FIRE on reset
by default. Matching all of that would need a second, differently-behaving code path, and it was
no faster here: with one thread, B=8 Breakout RGB 96x96 ran at about 1 500 agent steps per second,
against about 1 700 for ``AtariEnv`` (2-core machine; more threads would help on more cores).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass

import ale_py
import cv2
import gymnasium
import numpy as np

from games.atari_protocol import AtariProtocol
from games.timestep import TimeStep, batch_actions, reset_indices

gymnasium.register_envs(ale_py)

_NAME_SUFFIX = re.compile(r"(NoFrameskip|Deterministic)?(-v\d+)?$")


@functools.lru_cache(maxsize=1)
def available_games() -> tuple[str, ...]:
    """The ALE ROM ids (snake_case, e.g. ``"pong"``) that have a single-player ``ALE/<Name>-v5``."""
    registry = gymnasium.registry
    return tuple(sorted(r for r in ale_py.roms.get_all_rom_ids() if _env_id(r) in registry))


def _env_id(rom_id: str) -> str:
    return f"ALE/{rom_id.title().replace('_', '')}-v5"


def resolve_game(name: str) -> str:
    """The ROM id of ``name``: ``"pong"``, ``"Pong"``, ``"PongNoFrameskip-v4"``, ``"ALE/Pong-v5"``,
    ``"space_invaders"`` and ``"SpaceInvaders"`` all resolve. Unknown names raise ``ValueError``
    listing the available games."""
    base = str(name).strip()
    base = base.removeprefix("ALE/")
    base = _NAME_SUFFIX.sub("", base)
    key = base.replace("_", "").replace("-", "").replace(" ", "").lower()
    by_key = {rom.replace("_", ""): rom for rom in available_games()}
    if key not in by_key:
        raise ValueError(
            f"unknown Atari game {name!r}; available ALE games: {', '.join(available_games())}"
        )
    return by_key[key]


def clip_reward(reward: np.ndarray) -> np.ndarray:
    """Training-time reward clipping: the sign of the reward, as float32."""
    return np.sign(reward).astype(np.float32)


@dataclass
class AtariSettings(AtariProtocol):
    """The protocol (`AtariProtocol`, the ``game.atari`` group) for one game, in training or
    evaluation mode; see the module docstring for what each field does."""

    game: str = "pong"
    training: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        resolve_game(self.game)

    def train(self) -> AtariSettings:
        """These settings in training mode (life loss terminal, clipped rewards, if enabled)."""
        return dataclasses.replace(self, training=True)

    def evaluation(self) -> AtariSettings:
        """These settings in evaluation mode: real game over only, raw rewards."""
        return dataclasses.replace(self, training=False)

    @property
    def rom_id(self) -> str:
        return resolve_game(self.game)

    @property
    def env_id(self) -> str:
        return _env_id(self.rom_id)

    @property
    def life_loss_is_terminal(self) -> bool:
        return self.training and self.terminal_on_life_loss

    @property
    def rewards_are_clipped(self) -> bool:
        return self.training and self.clip_rewards

    @property
    def channels(self) -> int:
        return 1 if self.grayscale else 3

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        """``(frame_stack * channels, resolution, resolution)``, channels first, oldest frame first."""
        return (self.frame_stack * self.channels, self.resolution, self.resolution)


class AtariEnv:
    """B Atari games in lockstep, one ALE emulator each, preprocessed per ``AtariSettings``.

    ``reset(seeds=None, indices=None)`` starts (or, after a life loss in training, continues) the
    games in ``indices``; ``step(actions)`` moves every unfinished game by one agent step. Measured
    on the 2-core development machine: about 1 700 agent steps per second for B=8 (RGB, 96x96), in
    one process; the emulator takes about half, the INTER_AREA resize most of the rest.
    """

    def __init__(self, settings: AtariSettings | None = None, batch_size: int = 1, seed: int = 0):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.settings = s = settings if settings is not None else AtariSettings()
        self.batch_size = batch_size
        self.game_over = np.ones(batch_size, np.bool_)  # the real game ended: next reset is new
        self._rom_path = ale_py.roms.get_rom_path(s.rom_id)
        self.ales: list[ale_py.ALEInterface] = [ale_py.ALEInterface() for _ in range(batch_size)]
        self._noop_rngs: list[np.random.Generator] = [None] * batch_size  # set by _seed
        for b, slot_seed in enumerate(_slot_seeds(seed, batch_size)):
            ale = self.ales[b]
            ale.setLoggerMode(ale_py.LoggerMode.Error)
            ale.setFloat("repeat_action_probability", s.repeat_action_probability)
            ale.setInt("max_num_frames_per_episode", s.max_episode_frames)
            ale.setInt("frame_skip", 1)
            self._seed(b, slot_seed)
        ale = self.ales[0]
        actions = ale.getLegalActionSet() if s.full_action_space else ale.getMinimalActionSet()
        self.action_set = list(actions)
        self.action_meanings = [a.name for a in self.action_set]
        self.num_actions = len(self.action_set)
        self.obs_shape = s.obs_shape

        height, width = self.ales[0].getScreenDims()
        screen = (height, width) if s.grayscale else (height, width, 3)
        self._screens = np.zeros((batch_size, 2, *screen), np.uint8)  # [b, (newest, previous)]
        self._obs = np.zeros((batch_size, *self.obs_shape), np.uint8)
        self._legal = np.ones((batch_size, self.num_actions), np.bool_)
        self._reward = np.zeros(batch_size, np.float32)
        self._terminated = np.zeros(batch_size, np.bool_)
        self._truncated = np.zeros(batch_size, np.bool_)
        self._started = np.zeros(batch_size, np.bool_)
        self.raw_reward = np.zeros(batch_size, np.float32)
        self.episode_return = np.zeros(batch_size, np.float64)
        self.episode_steps = np.zeros(batch_size, np.int64)
        self.lives = np.zeros(batch_size, np.int64)

    # -- protocol ------------------------------------------------------------------------------

    def reset(self, seeds=None, indices=None, new_game: bool = False) -> TimeStep:
        """Start the episodes of the slots in ``indices`` (all by default).

        A slot whose real game is over (or that never started) starts a new game with no-ops. A slot
        that ended on a life loss continues its game with one no-op step, unless ``new_game`` or a
        seed is given. ``seeds``: None (continue each slot's random streams), an int (one seed
        spread over the reset slots) or one int per reset slot; a seed reseeds the slot's emulator
        and no-op generator and starts a new game.
        """
        indices = self._check_indices(indices)
        if seeds is None:
            slot_seeds = [None] * len(indices)
        elif np.ndim(seeds) == 0:
            slot_seeds = _slot_seeds(int(seeds), len(indices))
        else:
            slot_seeds = [int(x) for x in np.asarray(seeds).reshape(-1)]
            if len(slot_seeds) != len(indices):
                raise ValueError(f"got {len(slot_seeds)} seeds for {len(indices)} reset slots")
        for b, slot_seed in zip(indices, slot_seeds, strict=True):
            if slot_seed is not None:
                self._seed(b, slot_seed)
            if new_game or slot_seed is not None or self.game_over[b]:
                frame = self._new_game(b)
            else:
                frame = self._next_life(b)
            self._obs[b] = np.concatenate([frame] * self.settings.frame_stack)
            self._started[b] = True
            self._reward[b] = 0.0
            self.raw_reward[b] = 0.0
            self._terminated[b] = False
            self._truncated[b] = False
        return self.timestep()

    def step(self, actions) -> TimeStep:
        actions = batch_actions(actions, self.batch_size)
        if not np.issubdtype(actions.dtype, np.integer) or (
            (actions < 0).any() or (actions >= self.num_actions).any()
        ):
            raise ValueError(f"actions must be integers in [0, {self.num_actions}), got {actions}")
        if not self._started.all():
            raise RuntimeError(f"reset slots {np.flatnonzero(~self._started)} before stepping")
        s = self.settings
        c = s.channels
        for b, action in enumerate(actions.tolist()):
            if self._terminated[b] or self._truncated[b]:
                self._reward[b] = 0.0
                self.raw_reward[b] = 0.0
                continue
            raw, frame = self._agent_step(b, self.action_set[action])
            ale = self.ales[b]
            lives = ale.lives()
            life_lost = lives < self.lives[b]
            self.lives[b] = lives
            self.game_over[b] = ale.game_over()  # with truncation
            game_terminal = ale.game_over(with_truncation=False)
            self._terminated[b] = game_terminal or (s.life_loss_is_terminal and life_lost)
            self._truncated[b] = ale.game_truncated() and not self._terminated[b]
            self.raw_reward[b] = raw
            self._reward[b] = np.sign(raw) if s.rewards_are_clipped else raw
            obs = self._obs[b]
            obs[:-c] = obs[c:].copy()
            obs[-c:] = frame
        return self.timestep()

    def timestep(self) -> TimeStep:
        terminated = self._terminated.copy()
        return TimeStep(
            obs=self._obs.copy(),
            legal=self._legal.copy(),
            to_play=np.where(terminated, -1, 0).astype(np.int64),
            reward=self._reward.copy(),
            terminated=terminated,
            truncated=self._truncated.copy(),
        )

    @property
    def episode_frames(self) -> np.ndarray:
        """The ALE's episode frame number per slot (raw frames of the real game, no-ops included)."""
        return np.array([ale.getEpisodeFrameNumber() for ale in self.ales], np.int64)

    # -- one slot ------------------------------------------------------------------------------

    def _seed(self, b: int, seed: int) -> None:
        """Seed slot ``b``'s emulator (sticky actions) and no-op generator; the ALE takes its seed
        when the ROM loads, so this (re)loads it (about 0.1 s)."""
        ale_seed, noop_seed = np.random.SeedSequence(seed).generate_state(2)
        self.ales[b].setInt("random_seed", int(ale_seed) & 0x7FFFFFFF)
        self.ales[b].loadROM(self._rom_path)
        self._noop_rngs[b] = np.random.default_rng(noop_seed)
        self.game_over[b] = True

    def _grab(self, b: int, which: int) -> None:
        if self.settings.grayscale:
            self.ales[b].getScreenGrayscale(self._screens[b, which])
        else:
            self.ales[b].getScreenRGB(self._screens[b, which])

    def _frame(self, screen: np.ndarray) -> np.ndarray:
        """One raw (pooled) screen -> ``uint8 [channels, resolution, resolution]``."""
        size = (self.settings.resolution, self.settings.resolution)
        small = cv2.resize(screen, size, interpolation=cv2.INTER_AREA)
        return small[None] if small.ndim == 2 else small.transpose(2, 0, 1)

    def _agent_step(self, b: int, ale_action) -> tuple[float, np.ndarray]:
        """Repeat ``ale_action`` for ``frame_skip`` raw frames (fewer if the game ends, or reaches
        the frame cap, on the way); return the summed raw reward and the processed frame: the max
        of the last two raw frames, or the last raw frame alone for a step one frame long."""
        ale = self.ales[b]
        skip = self.settings.frame_skip
        reward = 0.0
        for i in range(skip):
            reward += ale.act(ale_action)
            last = i == skip - 1 or ale.game_over()
            if i == skip - 2:
                self._grab(b, 1)
            if last:
                self._grab(b, 0)
                break
        screens = self._screens[b]
        pooled = np.maximum(screens[0], screens[1]) if i >= 1 and i >= skip - 2 else screens[0]
        self.episode_return[b] += reward
        self.episode_steps[b] += 1
        return reward, self._frame(pooled)

    def _new_game(self, b: int) -> np.ndarray:
        ale = self.ales[b]
        ale.reset_game()
        noop_max = self.settings.noop_max
        noops = int(self._noop_rngs[b].integers(1, noop_max + 1)) if noop_max > 0 else 0
        for _ in range(noops):
            ale.act(ale_py.Action.NOOP)
            if ale.game_over():
                ale.reset_game()
        self._grab(b, 0)
        self.lives[b] = ale.lives()
        self.game_over[b] = False
        self.episode_return[b] = 0.0
        self.episode_steps[b] = 0
        return self._frame(self._screens[b, 0])

    def _next_life(self, b: int) -> np.ndarray:
        """After a life loss: one no-op agent step in the same game (EpisodicLife's reset)."""
        _, frame = self._agent_step(b, ale_py.Action.NOOP)
        ale = self.ales[b]
        if ale.game_over():  # the no-op ended the game (rare): start a new one instead
            return self._new_game(b)
        self.lives[b] = ale.lives()
        return frame

    def _check_indices(self, indices) -> list[int]:
        return reset_indices(indices, self.batch_size)


def _slot_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent 32-bit seeds derived from one."""
    return [int(x) for x in np.random.SeedSequence(seed).generate_state(n)]
