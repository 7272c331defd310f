"""Property-based fuzzing of the three readers of user files: whatever the file holds,
it loads or raises mdad's own one-line error, never another exception."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdad.data import load_dataset, load_wide_csv
from mdad.data.lm_eval import load_lm_eval_samples
from mdad.errors import MdadError
from mdad.practice import ItemScores, compare_models, estimate_score, select_microbenchmark
from mdad.practice.bundle import MicroBenchmarkFile

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=12)


def small_dataset(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    ability = rng.normal(size=(12, 1))
    correct = (rng.normal(size=(12, 30)) + ability > 0).astype(int)
    lines = ["item_id," + ",".join(f"m{k}" for k in range(12))]
    lines += [f"q{i}," + ",".join(map(str, correct[:, i])) for i in range(30)]
    path = folder / "small.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    data = load_dataset(small_dataset(tmp_path_factory.mktemp("fuzz")))
    return {method: json.loads(select_microbenchmark(data, method, 8, seed=1).to_json())
            for method in ("random", "anchor-points-predictor", "tinybenchmarks-pirt")}


def assert_one_line(error: MdadError) -> None:
    """A refusal is mdad's own error, said on one line (the CLI prints it alone)."""
    message = str(error)
    assert message.strip() and "\n" not in message.strip(), message


def use(path: Path) -> None:
    """Everything estimate and compare do with a file."""
    bundle = MicroBenchmarkFile.load(path)
    scores = np.linspace(0, 1, bundle.size) > 0.5
    answers = ItemScores("new", scores.astype(float), [], 0)
    estimate_score(bundle, answers)
    compare_models(bundle, answers, ItemScores("other", 1.0 - scores, [], 0))


@FUZZ
@given(method=st.sampled_from(["random", "anchor-points-predictor", "tinybenchmarks-pirt"]),
       edits=st.lists(st.tuples(st.text(max_size=20), JSON_VALUES), min_size=1, max_size=3),
       pick_known=st.lists(st.booleans(), min_size=3, max_size=3))
def test_microbenchmark_reader(bundles, tmp_path: Path, method, edits, pick_known) -> None:
    data = copy.deepcopy(bundles[method])
    fields = sorted(data)
    for (key, value), known in zip(edits, pick_known, strict=False):
        if known:  # most edits hit a real field, or a part of the estimator
            key = fields[sum(map(ord, key)) % len(fields)]
        estimator = data.get("estimator")
        inside = isinstance(estimator, dict) and key in estimator and len(str(value)) % 2
        (estimator if inside else data)[key] = value
    path = tmp_path / "mb.json"
    path.write_text(json.dumps(data))
    try:
        use(path)
    except MdadError as error:
        assert_one_line(error)


@pytest.mark.parametrize("text", ["[" * 100_000, "{}", "[]", "null", "\x00\xff", ""])
def test_microbenchmark_reader_on_junk(text: str, tmp_path: Path) -> None:
    path = tmp_path / "mb.json"
    path.write_text(text, encoding="latin-1")
    with pytest.raises(MdadError):
        MicroBenchmarkFile.load(path)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("items", [], r"'items' must be a list of `size` distinct item ids"),
    ("mdad", "big", r"'mdad' must be an accuracy gap"),
    ("mdad", -1, r"'mdad' must be an accuracy gap"),
    ("error_sd", -0.1, r"'error_sd' must be null or a non-negative"),
    ("reference_accuracy", "x", r"'reference_accuracy' must be one accuracy"),
    ("reference_models", ["a", "a"], r"'reference_models' must be a list of distinct"),
])
def test_tampered_fields_are_named(bundles, tmp_path: Path, field, value, message) -> None:
    data = copy.deepcopy(bundles["tinybenchmarks-pirt"])
    data[field] = value
    path = tmp_path / "mb.json"
    path.write_text(json.dumps(data))
    with pytest.raises(MdadError, match=message):
        MicroBenchmarkFile.load(path)


def test_negative_and_short_weights_are_refused(bundles, tmp_path: Path) -> None:
    for weights in ([-1.0] * 8, [1.0] * 3):
        data = copy.deepcopy(bundles["tinybenchmarks-pirt"])
        data["estimator"]["weights"] = weights
        path = tmp_path / "mb.json"
        path.write_text(json.dumps(data))
        with pytest.raises(MdadError, match=r"'estimator' must be .*weights"):
            MicroBenchmarkFile.load(path)


CELLS = st.sampled_from(["0", "1", "0.5", "", "x", "True", "nan", "-1", "2", "1e400",
                         " 1", '"1"', "0;1", "ü"])
NAMES = st.sampled_from(["item_id", "subtask", "m1", "m2", "m1", "", "id", "category",
                         "[/bold]", "src"])


@FUZZ
@given(header=st.lists(NAMES, min_size=1, max_size=5),
       rows=st.lists(st.lists(CELLS, min_size=0, max_size=6), max_size=8),
       separator=st.sampled_from([",", ";"]),
       orientation=st.sampled_from(["auto", "items-as-rows", "models-as-rows"]))
def test_wide_csv_reader(tmp_path: Path, header, rows, separator, orientation) -> None:
    path = tmp_path / "fuzz.csv"
    text = "\n".join(separator.join(line) for line in [header, *rows])
    path.write_bytes(text.encode("utf-8"))
    try:
        load_wide_csv(path, orientation=orientation)
    except MdadError as error:
        assert_one_line(error)


RECORD = {"doc_id": 0, "doc": {"answer": 1}, "target": 1, "acc": 1.0, "acc_norm": 1.0,
          "filtered_resps": [["-1.5", "False"], ["-0.5", "True"]],
          "resps": [[["-1.5", "False"]], [["-0.5", "True"]]]}


@FUZZ
@given(lines=st.lists(st.one_of(
    st.builds(lambda doc, key, value: {**RECORD, "doc_id": doc, key: value},
              st.integers(-2, 5), st.sampled_from(sorted(RECORD)), JSON_VALUES),
    st.just(RECORD), JSON_VALUES), min_size=1, max_size=6),
    junk=st.sampled_from([b"", b"\xff\xfe", b"\x1f\x8b\x08\x00", b"{", b"\n\n", b"\xe9t\xe9"]))
def test_lm_eval_samples_reader(tmp_path: Path, lines, junk) -> None:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    path = folder / "samples_task_2024-01-01T00-00-00.jsonl"
    body = b"\n".join(json.dumps(line).encode("utf-8") for line in lines)
    path.write_bytes(body + b"\n" + junk)
    for metric in ("acc", "acc_norm"):
        try:
            load_lm_eval_samples(folder, metric=metric)
        except MdadError as error:
            assert_one_line(error)


def test_irt_parameters_of_another_width_are_refused(bundles, tmp_path: Path) -> None:
    data = copy.deepcopy(bundles["tinybenchmarks-pirt"])
    data["estimator"]["others_discrimination"] = [
        row[:-1] for row in data["estimator"]["others_discrimination"]]
    path = tmp_path / "mb.json"
    path.write_text(json.dumps(data))
    with pytest.raises(MdadError, match=r"'estimator' must be an IRT estimator"):
        MicroBenchmarkFile.load(path)
