"""The Atari-100k protocol, asserted on the wrapped emulators (not on the settings object)."""

import cv2
import gymnasium
import numpy as np
import pytest

from games.atari import AtariEnv, AtariSettings, available_games, clip_reward, resolve_game


def _resize(screen, resolution=96):
    small = cv2.resize(screen, (resolution, resolution), interpolation=cv2.INTER_AREA)
    return small[None] if small.ndim == 2 else small.transpose(2, 0, 1)


def _hold(env, action, steps):
    for _ in range(steps):
        step = env.step([action] * env.batch_size)
    return step


def test_observations_are_uint8_channels_first_stacks():
    env = AtariEnv(AtariSettings(game="pong"), batch_size=2, seed=0)
    step = env.reset()
    assert step.obs.dtype == np.uint8 and step.obs.shape == (2, 12, 96, 96) == (2, *env.obs_shape)
    assert step.legal.shape == (2, env.num_actions) and step.legal.dtype == np.bool_
    assert step.legal.all() and env.num_actions == 6  # Pong's minimal action set
    assert step.to_play.dtype == np.int64 and (step.to_play == 0).all()
    assert step.reward.dtype == np.float32 and not step.done.any()
    step = env.step([0, 1])
    assert step.obs.shape == (2, 12, 96, 96) and (step.to_play == 0).all()

    gray = AtariEnv(AtariSettings(game="pong", grayscale=True), batch_size=1, seed=0)
    step = gray.reset()
    assert step.obs.dtype == np.uint8 and step.obs.shape == (1, 4, 96, 96)
    assert gray.step([0]).obs.shape == (1, 4, 96, 96)


def test_frame_skip_is_four_raw_frames_per_agent_step():
    env = AtariEnv(AtariSettings(game="pong"), batch_size=1, seed=0)
    env.reset()
    ale = env.ales[0]
    assert ale.getInt("frame_skip") == 1  # the ALE itself does not skip; the wrapper does
    for _ in range(5):
        episode_frame, frame = ale.getEpisodeFrameNumber(), ale.getFrameNumber()
        env.step([0])
        assert ale.getEpisodeFrameNumber() == episode_frame + 4
        assert ale.getFrameNumber() == frame + 4


@pytest.mark.parametrize("grayscale", [False, True])
def test_observation_is_the_resized_max_of_the_last_two_raw_frames(grayscale):
    env = AtariEnv(AtariSettings(game="pong", grayscale=grayscale), batch_size=1, seed=0)
    env.reset()
    _hold(env, 0, 60)  # the ball is in play
    ale, action = env.ales[0], env.action_set[2]
    grab = ale.getScreenGrayscale if grayscale else ale.getScreenRGB
    before = ale.cloneState()
    screens = []
    for _ in range(4):  # replay the step by hand on the same emulator state
        ale.act(action)
        screens.append(grab().copy())
    ale.restoreState(before)
    step = env.step([2])
    c = 1 if grayscale else 3
    pooled = _resize(np.maximum(screens[-2], screens[-1]))
    assert not np.array_equal(screens[-2], screens[-1])  # the pooling has something to do
    assert not np.array_equal(pooled, _resize(screens[-1]))
    np.testing.assert_array_equal(step.obs[0, -c:], pooled)


def test_frames_stack_oldest_first_and_reset_repeats_the_first_frame():
    env = AtariEnv(AtariSettings(game="pong"), batch_size=1, seed=3)
    first = env.reset().obs[0]
    reset_frame = _resize(env.ales[0].getScreenRGB())
    for k in range(4):
        np.testing.assert_array_equal(first[3 * k : 3 * k + 3], reset_frame)
    frames = [reset_frame]
    for _ in range(40):  # Pong's first frames are still; 40 steps reach play
        obs = env.step([0]).obs[0]
        frames.append(obs[-3:])
        expected = ([frames[0]] * 4 + frames[1:])[-4:]
        np.testing.assert_array_equal(obs, np.concatenate(expected))
    assert not np.array_equal(frames[-2], frames[-1])  # the frames do move


def test_sticky_actions_probability_is_set_on_the_emulator():
    env = AtariEnv(AtariSettings(game="pong"), batch_size=2, seed=0)
    assert all(ale.getFloat("repeat_action_probability") == 0.0 for ale in env.ales)
    sticky = AtariEnv(AtariSettings(game="pong", repeat_action_probability=0.25), 2, seed=0)
    assert all(ale.getFloat("repeat_action_probability") == 0.25 for ale in sticky.ales)
    # Seeded sticky actions replay exactly, and they do change the game against sticky-free play.
    again = AtariEnv(AtariSettings(game="pong", repeat_action_probability=0.25), 2, seed=0)
    plain = AtariEnv(AtariSettings(game="pong"), 2, seed=0)
    steps = [e.reset() for e in (sticky, again, plain)]
    for k in range(60):
        steps = [e.step([2 + k % 2] * 2) for e in (sticky, again, plain)]
        np.testing.assert_array_equal(steps[0].obs, steps[1].obs)
    assert not np.array_equal(steps[0].obs, steps[2].obs)


def test_noop_starts_are_seeded_and_bounded():
    env = AtariEnv(AtariSettings(game="pong"), batch_size=8, seed=0)
    env.reset(seeds=list(range(8)))
    frames = env.episode_frames
    assert ((frames >= 1) & (frames <= 30)).all()  # 1..30 raw no-op frames
    assert len(set(frames.tolist())) > 1  # the number of no-ops differs across seeds

    a = AtariEnv(AtariSettings(game="pong"), batch_size=1, seed=0)
    b = AtariEnv(AtariSettings(game="pong"), batch_size=1, seed=0)
    for seed in (5, 6):
        first_a, first_b = a.reset(seeds=[seed]).obs, b.reset(seeds=[seed]).obs
        np.testing.assert_array_equal(first_a, first_b)
        assert a.episode_frames[0] == b.episode_frames[0]
    assert a.episode_frames[0] == frames[6]  # a seed fixes the start whatever the env's seed
    np.testing.assert_array_equal(a.step([3]).obs, b.step([3]).obs)

    none = AtariEnv(AtariSettings(game="pong", noop_max=0), batch_size=1, seed=0)
    none.reset()
    assert none.episode_frames[0] == 0


def test_life_loss_is_terminal_in_training_and_continues_the_game():
    train = AtariEnv(AtariSettings(game="breakout"), batch_size=1, seed=0)
    train.reset()
    assert train.lives[0] == 5 == train.ales[0].lives()
    fire = train.action_meanings.index("FIRE")
    for _ in range(200):
        step = train.step([fire])
        if step.terminated[0]:
            break
    assert step.terminated[0] and not step.truncated[0] and step.to_play[0] == -1
    assert train.ales[0].lives() == 4 and not train.game_over[0]
    frame = train.ales[0].getEpisodeFrameNumber()
    steps_to_first_loss = train.episode_steps[0]

    ignored = train.step([fire])  # a finished slot ignores its action until reset
    assert ignored.terminated[0] and ignored.reward[0] == 0
    assert train.ales[0].getEpisodeFrameNumber() == frame

    step = train.reset()
    assert not step.done.any() and step.to_play[0] == 0
    assert train.ales[0].lives() == 4  # the same game: no emulator reset
    assert train.ales[0].getEpisodeFrameNumber() == frame + 4  # one no-op step, then play on
    losses = 1
    while not train.game_over[0]:
        step = train.step([fire])
        if step.terminated[0]:
            losses += 1
            assert train.ales[0].lives() == 5 - losses
            if not train.game_over[0]:
                train.reset()
    assert losses == 5 and train.ales[0].game_over()
    train.reset()  # now a real new game
    assert train.ales[0].lives() == 5 and train.ales[0].getEpisodeFrameNumber() <= 30
    assert train.episode_return[0] == 0 and train.episode_steps[0] == 0

    evaluation = AtariEnv(AtariSettings(game="breakout").evaluation(), batch_size=1, seed=0)
    evaluation.reset()
    for _ in range(steps_to_first_loss):
        step = evaluation.step([fire])
    assert evaluation.ales[0].lives() == 4 and not step.done.any()  # a life lost, not terminal
    while not step.done[0]:
        step = evaluation.step([fire])
    assert step.terminated[0] and evaluation.game_over[0] and evaluation.ales[0].lives() == 0


def test_rewards_are_clipped_in_training_only():
    settings = AtariSettings(game="space_invaders", noop_max=0)
    train = AtariEnv(settings, batch_size=1, seed=0)
    evaluation = AtariEnv(settings.evaluation(), batch_size=1, seed=0)
    plain = gymnasium.make(
        "ALE/SpaceInvaders-v5", frameskip=4, repeat_action_probability=0.0
    )  # the raw ALE game, for the raw rewards
    plain.reset(seed=0)
    train.reset()
    evaluation.reset()
    fire = train.action_meanings.index("FIRE")
    seen = []
    for _ in range(140):
        raw = plain.step(fire)[1]
        t, e = train.step([fire]), evaluation.step([fire])
        assert e.reward[0] == raw == train.raw_reward[0]
        assert t.reward[0] == np.sign(raw)
        assert not (t.done.any() or e.done.any())
        seen.append(raw)
    assert max(seen) > 1  # invaders are worth 5..30 points: clipping was exercised
    assert train.episode_return[0] == evaluation.episode_return[0] == sum(seen)
    np.testing.assert_array_equal(clip_reward(np.array([-7.0, 0.0, 4.0])), [-1, 0, 1])


def test_truncation_at_the_frame_cap():
    settings = AtariSettings(game="pong", noop_max=0, max_episode_frames=400)
    env = AtariEnv(settings, batch_size=2, seed=0)
    assert all(ale.getInt("max_num_frames_per_episode") == 400 for ale in env.ales)
    env.reset()
    for _ in range(99):
        assert not env.step([0, 0]).done.any()
    step = env.step([0, 0])
    assert step.truncated.all() and not step.terminated.any() and (step.to_play == 0).all()
    assert (env.episode_frames == 400).all() and env.game_over.all()
    step = env.reset(indices=[1])  # only slot 1 starts again, as a new game
    assert step.truncated.tolist() == [True, False]
    assert env.episode_frames.tolist() == [400, 0] and env.game_over.tolist() == [True, False]


def test_game_names_resolve_and_unknown_games_list_the_available_ones():
    for name in ("pong", "Pong", "PongNoFrameskip-v4", "ALE/Pong-v5", "PongDeterministic-v4"):
        assert resolve_game(name) == "pong"
    assert resolve_game("SpaceInvaders") == resolve_game("space_invaders") == "space_invaders"
    assert AtariSettings(game="MsPacmanNoFrameskip-v4").env_id == "ALE/MsPacman-v5"
    assert "pong" in available_games() and "breakout" in available_games()
    with pytest.raises(ValueError, match="available ALE games") as info:
        AtariSettings(game="pongg")
    assert "pong" in str(info.value) and "breakout" in str(info.value)


def test_train_and_evaluation_variants_of_one_settings_object():
    settings = AtariSettings(game="breakout")
    assert settings.life_loss_is_terminal and settings.rewards_are_clipped
    evaluation = settings.evaluation()
    assert not evaluation.life_loss_is_terminal and not evaluation.rewards_are_clipped
    assert evaluation.train() == settings


def test_bad_input_is_refused():
    env = AtariEnv(AtariSettings(game="pong"), batch_size=2, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step([0, 0])
    env.reset()
    with pytest.raises(ValueError, match="2 actions"):
        env.step([0])
    with pytest.raises(ValueError, match="actions must be"):
        env.step([0, 6])
    with pytest.raises(ValueError, match="indices"):
        env.reset(indices=[2])
    with pytest.raises(ValueError, match="frame_skip"):
        AtariSettings(frame_skip=0)
