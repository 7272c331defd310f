"""Named random streams (`mdad.streams`): independent by name, the study's kept."""

from __future__ import annotations

import ast
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mdad import streams
from mdad.errors import ConfigError
from mdad.study import seeds

SOURCE = Path(streams.__file__).parent
labels = st.lists(st.one_of(st.integers(0, 2**32 - 1),
                            st.sampled_from(["select", "pool", "folds", "fit", "round-trip"])),
                  max_size=4)


def _first(generator: np.random.Generator) -> int:
    return int(generator.integers(2**62))


def test_a_stream_without_labels_is_numpys_stream_of_the_seed():
    assert _first(streams.rng(7)) == _first(np.random.default_rng(7))


def test_a_name_is_its_crc32_and_a_number_itself():
    # CRC-32 of "select", by binascii (an independent implementation of the same code)
    assert streams.label_id("select") == 0x4BF2EAC0
    assert streams.label_id(5) == 5
    expected = np.random.SeedSequence(3, spawn_key=(zlib.crc32(b"select"), 5))
    assert streams.stream(3, "select", 5).spawn_key == expected.spawn_key
    assert _first(streams.rng(3, "select", 5)) == _first(np.random.default_rng(expected))


def test_the_old_offsets_collided_and_the_named_streams_do_not():
    # seed + 1000 * (k + 1): seed 0's fold 1 is seed 1000's fold 0
    assert 0 + 1000 * (1 + 1) == 1000 + 1000 * (0 + 1)
    one = streams.rng(0, "cross-validation", "pool", 1)
    other = streams.rng(1000, "cross-validation", "pool", 0)
    assert _first(one) != _first(other)


@given(st.integers(0, 2**32), labels, st.integers(0, 2**32), labels)
def test_different_paths_give_different_streams(seed_a, path_a, seed_b, path_b):
    same = seed_a == seed_b and [streams.label_id(x) for x in path_a] == [
        streams.label_id(x) for x in path_b]
    draws_equal = (streams.rng(seed_a, *path_a).integers(2**62, size=2).tolist()
                   == streams.rng(seed_b, *path_b).integers(2**62, size=2).tolist())
    assert draws_equal == same


@given(st.integers(0, 2**32), labels, labels)
def test_a_stream_of_a_stream_appends_its_labels(seed, head, tail):
    nested = streams.stream(streams.stream(seed, *head), *tail)
    flat = streams.stream(seed, *head, *tail)
    assert (nested.entropy, nested.spawn_key) == (flat.entropy, flat.spawn_key)


@given(st.integers(0, 2**32), labels)
def test_a_derived_seed_is_a_whole_number_below_2_63(seed, path):
    value = streams.derived_seed(seed, *path)
    assert isinstance(value, int) and 0 <= value < 2**63
    assert value == streams.derived_seed(seed, *path)


@pytest.mark.parametrize("label", [-1, 1.5, 2.0, True, None, 2**32])
def test_a_label_must_be_a_name_or_a_whole_number_below_2_32(label):
    # 2**32 would be split into two 32-bit words: the path (0, 1)
    assert (np.random.SeedSequence(5, spawn_key=(2**32,)).generate_state(1)
            == np.random.SeedSequence(5, spawn_key=(0, 1)).generate_state(1)).all()
    with pytest.raises(ConfigError, match="a stream's label must be") as info:
        streams.stream(0, label)
    assert info.value.parameters == ("labels",)


@pytest.mark.parametrize("seed", [None, -1, 1.5, "0"])
def test_a_seed_must_be_a_whole_number_or_a_stream(seed):
    with pytest.raises(ConfigError, match=r"^seed must be a whole number") as info:
        streams.rng(seed)
    assert info.value.parameters == ("seed",)


def test_the_studys_streams_keep_their_draws():
    # the study's seeds predate the names: (small number, ...) spawn keys, as before
    old = {
        "run": np.random.SeedSequence(5, spawn_key=(0, 2)),
        "cell": np.random.SeedSequence(5, spawn_key=(1, 2, zlib.crc32(b"random"), 10, 100)),
        "metric": np.random.SeedSequence(5, spawn_key=(2, zlib.crc32(b"random"), 10)),
    }
    assert _first(seeds.run_rng(5, 2)) == _first(np.random.default_rng(old["run"]))
    assert (_first(seeds.cell_rng(5, 2, "random", 10, 100))
            == _first(np.random.default_rng(old["cell"])))
    assert _first(seeds.metric_rng(5, "random", 10)) == _first(np.random.default_rng(old["metric"]))
    pool = seeds.pool_seed(5, 2, 100, "physics")
    assert pool.spawn_key == (3, 2, 100, zlib.crc32(b"physics"))
    assert seeds.pool_seed(5, 2, 100).spawn_key == (3, 2, 100)


def _random_calls(path: Path, root: Path = SOURCE) -> list[str]:
    """``file:line`` of each seed sequence built, or generator seeded by a literal, a
    list or arithmetic (positionally or as `seed`/`random_state`): randomness drawn
    outside `mdad.streams`."""
    ad_hoc = ast.Constant | ast.List | ast.Tuple | ast.BinOp
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        given = [*node.args, *(k.value for k in node.keywords if k.arg in ("seed",))]
        seeded = name in ("default_rng", "RandomState") and any(
            isinstance(arg, ad_hoc) for arg in given)
        by_keyword = any(k.arg == "random_state" and isinstance(k.value, ad_hoc)
                         for k in node.keywords)
        if name == "SeedSequence" or seeded or by_keyword:
            found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_the_library_draws_randomness_only_through_named_streams():
    # the library's; a benchmark may seed its made-up inputs as it likes
    home = SOURCE / "streams.py"
    found = [hit for path in sorted(SOURCE.rglob("*.py")) if path != home
             for hit in _random_calls(path)]
    assert found == []


def test_the_rule_sees_ad_hoc_seeds(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import numpy as np\n"
                     "a = np.random.default_rng([seed, k])\n"
                     "b = np.random.default_rng(seed + 1000 * k)\n"
                     "c = np.random.SeedSequence(seed, spawn_key=(7,))\n"
                     "d = np.random.default_rng(stream)\n"
                     "e = Irt(3, random_state=0)\n"
                     "f = np.random.RandomState(seed=[1, 2])\n")
    assert _random_calls(probe, tmp_path) == ["probe.py:2", "probe.py:3", "probe.py:4",
                                              "probe.py:6", "probe.py:7"]
