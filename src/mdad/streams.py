"""Named random streams: the one way the library draws randomness.

A stream is a user's whole-number seed and a path of labels, such as
``(seed, "select")`` or ``(seed, "cross-validation", "pool", fold)``. Names are
hashed to 32 bits (CRC-32), whole numbers are kept; both become numpy's
``SeedSequence.spawn_key``, so two different paths give independent streams
whatever their seeds: seed 0's fold 1 is not seed 1000's fold 0, as it would be
with ``seed + 1000 * (fold + 1)``. A path of no labels is numpy's own stream of
the seed (``default_rng(seed)``).
"""

from __future__ import annotations

import zlib

import numpy as np

from mdad.errors import ConfigError

Label = str | int


def label_id(label: Label) -> int:
    """A label's place in a spawn key: a name's CRC-32, or a whole number in
    [0, 2**32) itself (numpy splits larger ones into 32-bit words, which would make
    ``(2**32,)`` the path ``(0, 1)``)."""
    if isinstance(label, str):
        return zlib.crc32(label.encode("utf-8"))
    if not isinstance(label, int | np.integer) or isinstance(label, bool) or not (
            0 <= label < 2**32):
        raise ConfigError(f"a stream's label must be a name or a whole number in [0, 2**32), "
                          f"not {label!r}", parameters=("labels",))
    return int(label)


def stream(seed: int | np.random.SeedSequence, *labels: Label) -> np.random.SeedSequence:
    """The seed sequence of the stream `labels` of `seed` (a whole number >= 0).

    `seed` may itself be a stream: its labels then come first, so
    ``stream(stream(s, "a"), "b") == stream(s, "a", "b")``.
    """
    keys = tuple(map(label_id, labels))
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, *keys))
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed must be a whole number >= 0 or a SeedSequence, not {seed!r} "
                          "(None would draw from the operating system: not reproducible)",
                          parameters=("seed",))
    return np.random.SeedSequence(int(seed), spawn_key=keys)


def rng(seed: int | np.random.SeedSequence, *labels: Label) -> np.random.Generator:
    """A generator of the stream `labels` of `seed` (see `stream`)."""
    return np.random.default_rng(stream(seed, *labels))


def derived_seed(seed: int | np.random.SeedSequence, *labels: Label) -> int:
    """A whole-number seed in [0, 2**63) for a run that takes one (e.g. a `select`
    inside a round trip), drawn from the stream `labels` of `seed`."""
    return int(stream(seed, *labels).generate_state(1, np.uint64)[0] >> np.uint64(1))
