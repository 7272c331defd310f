"""What a micro-benchmark was selected from, and answers that are not its dataset's
(issue 35's silent wrong answers 1 and 6)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_ok, assert_user_error, mdad_cli

from mdad.practice import select_microbenchmark
from mdad.practice.bundle import MicroBenchmarkFile, names_sha256


@pytest.fixture(scope="module")
def gpqa_file(gpqa_data, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mb") / "mb.json"
    select_microbenchmark(gpqa_data, "random", 25, seed=3).save(path)
    return path


def test_answers_to_another_benchmark_are_refused_even_when_partial(gpqa_file: Path,
                                                                     tmp_path: Path):
    """MMLU-Pro's item ids are numbers too, and some fall on GPQA's: with
    --allow-partial they were estimated as GPQA answers."""
    from mdad.data import load_dataset

    ids = [str(i) for i in load_dataset("mmlu-pro-29").matrix.item_ids]
    answers = tmp_path / "mmlu.csv"
    answers.write_text("item_id,correct\n" + "".join(f"{i},{k % 2}\n"
                                                     for k, i in enumerate(ids)))
    # a stray id among GPQA's own answers is ignored and counted, not refused
    bundle_items = MicroBenchmarkFile.load(gpqa_file).items
    stray = tmp_path / "stray.csv"
    stray.write_text("item_id,correct\n" + "".join(f"{i},1\n" for i in bundle_items)
                     + "not-an-item,1\n")
    proc = mdad_cli("estimate", gpqa_file, stray, cwd=tmp_path)
    assert_ok(proc)
    assert "1 items that are not in the micro-benchmark" in " ".join(proc.stderr.split())
    bundle = MicroBenchmarkFile.load(gpqa_file)
    assert any(i in bundle.items for i in ids)  # the overlap that fooled it
    for extra in ((), ("--allow-partial",)):
        assert_user_error(mdad_cli("estimate", gpqa_file, answers, *extra, cwd=tmp_path),
                          r"mmlu\.csv: \d+ of its 10326 items are not items of gpqa \(e\.g\. "
                          r"'\d+'\): answers to another benchmark\? pass this model's "
                          r"answers to gpqa")


def test_a_file_says_which_models_it_was_selected_from(gpqa_data, tmp_path: Path):
    names = [str(m) for m in gpqa_data.matrix.model_names]
    subset = names[::3]
    bundle = select_microbenchmark(gpqa_data, "anchor-points", 20, seed=0, models=subset)
    assert bundle.reference_models == subset and bundle.source_models == len(subset)
    assert bundle.dataset_models == 420
    assert bundle.source_models_sha256 == names_sha256(subset)
    assert len(bundle.cv_truth) == len(subset)
    same = select_microbenchmark(gpqa_data, "anchor-points", 20, seed=0,
                                 models=list(range(0, 420, 3)))
    assert same.items == bundle.items  # indices or names: one argument either way
    # the CLI: --models FILE, and estimate says it was a subset
    listing = tmp_path / "models.txt"
    listing.write_text("\n".join(subset) + "\n")
    out = tmp_path / "mb.json"
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "25", "--models",
                       listing, "--out", out, cwd=tmp_path))
    data = json.loads(out.read_text())
    assert (data["source_models"], data["dataset_models"]) == (140, 420)
    column = {str(i): k for k, i in enumerate(gpqa_data.matrix.item_ids)}
    row = gpqa_data.matrix.correctness[1, [column[i] for i in data["items"]]]
    answers = tmp_path / "new.csv"
    answers.write_text("item_id,correct\n" + "".join(
        f"{i},{int(v)}\n" for i, v in zip(data["items"], row, strict=True)))
    proc = mdad_cli("estimate", out, answers, cwd=tmp_path)
    assert_ok(proc)
    assert "selected from 140 of gpqa's 420 models" in " ".join(proc.stderr.split())
    everyone = tmp_path / "all.json"
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "25", "--out",
                       everyone, cwd=tmp_path))
    proc = mdad_cli("estimate", everyone, answers, "--allow-partial", cwd=tmp_path)
    assert "selected from" not in proc.stderr


def test_unknown_or_repeated_models_are_refused(gpqa_data):
    from mdad.errors import ConfigError, DataError

    with pytest.raises(DataError, match="models"):
        select_microbenchmark(gpqa_data, "random", 5, models=["no-such-model"])
    with pytest.raises(ConfigError, match="models: indices must be distinct"):
        select_microbenchmark(gpqa_data, "random", 5, models=np.array([1, 1]))


def test_long_digit_ids_and_leading_zeros_are_kept_as_they_are():
    from mdad.practice.bundle_format import compact_ids, in_compact

    long = "9" * 5000
    compact = compact_ids(["0", "1", "2", "007", long, "\u0663"])
    assert compact["ranges"] == [[0, 2]]
    assert in_compact(compact, ["1", "7", "007", long, "3", "\u0663"]) == [
        True, False, True, True, False, True]


def test_a_pool_file_is_not_compared_with_another_dataset_s_models(gpqa_data):
    from mdad.errors import ConfigError
    from mdad.practice import with_reference

    pool = [str(i) for i in gpqa_data.matrix.item_ids[:100]]
    bundle = select_microbenchmark(gpqa_data, "random", 10, seed=0, pool=pool)
    with pytest.raises(ConfigError, match="a pool of 100 of gpqa's 448 items, whose item ids "
                                          "it does not record"):
        with_reference(bundle, gpqa_data)
