"""The item_id,correct CSV of one model's answers: written by `mdad data answers`, read
by `estimate` and `compare`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import assert_ok, assert_user_error, flat, mdad_cli
from hypothesis import given
from hypothesis import strategies as st

from mdad.data import ResponseMatrix
from mdad.errors import DataError
from mdad.practice import MicroBenchmarkFile, estimate_score, read_model_scores
from mdad.practice.answers import answers_csv, model_answers, read_answers_csv


def test_a_binary_model_is_written_as_digits_in_the_order_asked():
    matrix = ResponseMatrix([[1, 0, 1], [0, 0, 1]], ["a", "b"], ["q1", "q2", "q3"])
    assert answers_csv(*model_answers(matrix, "a")) == "item_id,correct\nq1,1\nq2,0\nq3,1\n"
    assert answers_csv(*model_answers(matrix, "b", ["q3", "q1"])) == (
        "item_id,correct\nq3,1\nq1,0\n")


def test_an_item_without_a_result_gets_no_row():
    matrix = ResponseMatrix([[1, np.nan, 0.5], [0, 0, 1]], ["a", "b"], ["q1", "q2", "q3"])
    ids, scores = model_answers(matrix, "a")
    assert ids == ["q1", "q2", "q3"] and np.isnan(scores[1])
    assert answers_csv(ids, scores) == "item_id,correct\nq1,1.0\nq3,0.5\n"


@pytest.fixture(scope="module")
def roundtrip_file(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("answers") / "answers.csv"


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=20))
def test_fractional_scores_read_back_exactly(roundtrip_file, scores):
    items = [f"item,{k}" for k in range(len(scores))]  # a comma, quoted by csv
    matrix = ResponseMatrix([scores], ["m"], items)
    roundtrip_file.write_text(answers_csv(*model_answers(matrix, "m")))
    read = read_answers_csv(roundtrip_file)
    assert list(read) == items
    assert np.array_equal(list(read.values()), matrix.scores()[0])


def test_an_unknown_model_names_the_nearest_and_an_unknown_item_is_counted():
    matrix = ResponseMatrix([[1, 0], [0, 1]], ["org__model-7b", "org__other"], ["x", "y"])
    with pytest.raises(DataError, match=r"model 'org/model-7b' is not one of the 2 models "
                       r"of .*; the nearest names are 'org__model-7b'") as info:
        model_answers(matrix, "org/model-7b")
    assert info.value.parameters == ("model",)
    with pytest.raises(DataError, match=r"^items: 1 of the 2 items are not in .* \(e.g. "
                       r"'z'\); give the data they were selected from") as info:
        model_answers(matrix, "org__other", ["x", "z"])
    assert info.value.parameters == ("items",)


def test_a_dataset_model_s_answers_estimate_as_its_own_scores(gpqa_data, tmp_path: Path):
    """`data answers` then `estimate`: the estimate is the model's accuracy on the
    micro-benchmark's items, as from its row of the matrix; the file says it is in-sample."""
    mb, answers = tmp_path / "mb.json", tmp_path / "answers.csv"
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "40", "--out", mb,
                       cwd=tmp_path))
    model = str(gpqa_data.matrix.model_names[7])
    proc = mdad_cli("data", "answers", "gpqa", "--model", model, "--items", mb, "--out",
                    answers, cwd=tmp_path)
    assert_ok(proc)
    assert f"{model}'s answers on 40 items of gpqa" in flat(proc.stdout)
    assert "an estimate from answers.csv is in-sample" in flat(proc.stderr)
    bundle = MicroBenchmarkFile.load(mb)
    columns = [int(np.flatnonzero(gpqa_data.matrix.item_ids.astype(str) == item)[0])
               for item in bundle.items]
    expected = gpqa_data.matrix.scores()[7, columns].mean()
    estimate = estimate_score(bundle, read_model_scores(answers, bundle))
    assert estimate.accuracy == pytest.approx(expected, abs=1e-12)
    proc = mdad_cli("estimate", mb, answers, cwd=tmp_path)
    assert_ok(proc)
    assert f"estimated accuracy {100 * expected:.1f}" in flat(proc.stdout)
    # never replaced without --force; an unknown model is one line naming --model
    assert_user_error(mdad_cli("data", "answers", "gpqa", "--model", model, "--out", answers,
                               cwd=tmp_path), r"--out .*answers\.csv already exists")
    assert_user_error(mdad_cli("data", "answers", "gpqa", "--model", "nobody", "--out",
                               tmp_path / "n.csv", cwd=tmp_path),
                      r"--model 'nobody' is not one of the 420 models")


def test_answers_hold_to_the_micro_benchmark_s_data_and_say_what_is_missing(tmp_path: Path):
    header = "model," + ",".join(f"q{k}" for k in range(8))
    rows = [f"m{i}," + ",".join(str((i * k + i) % 2) for k in range(8)) for i in range(6)]
    data = tmp_path / "data.csv"
    data.write_text("\n".join([header, *rows]) + "\n")
    other = tmp_path / "other.csv"  # the same layout, one score changed: another version
    other.write_text("\n".join([header, rows[0].replace(",0", ",1", 1), *rows[1:]]) + "\n")
    partial = tmp_path / "partial.csv"  # m1 has no result on q3
    cells = rows[1].split(",")
    cells[4] = ""
    partial.write_text("\n".join([header, rows[0], ",".join(cells), *rows[2:]]) + "\n")
    mb = tmp_path / "mb.json"
    assert_ok(mdad_cli("select", data, "--method", "random", "--size", "4", "--out", mb,
                       cwd=tmp_path))
    out = tmp_path / "a.csv"

    def answers(*args: object):
        return mdad_cli("data", "answers", *args, cwd=tmp_path)

    assert_user_error(answers(other, "--model", "m1", "--items", mb, "--out", out),
                      r"--items .*mb\.json was selected from .* with sha256 \w+\.\.\., this "
                      r"data has \w+\.\.\.; give the data it was selected from")
    assert_user_error(answers(data, "--model", "m1", "--items", mb, "--out", mb, "--force"),
                      r"--out .*mb\.json is the --items file")
    assert_user_error(answers(data, "--model", "m1", "--items", mb, "--metric", "acc_norm",
                              "--out", out), r"--metric acc_norm: the micro-benchmark .* "
                      r"was built on acc; leave out --metric")
    assert_user_error(answers(data, "--model", "m1", "--out", tmp_path),
                      r"--out .* is a folder; give a file name, e\.g\. .*answers\.csv")
    assert not out.exists()
    proc = answers(partial, "--model", "m1", "--out", out)
    assert_ok(proc)
    assert "m1's answers on 7 items" in flat(proc.stdout)
    assert "m1 has no result on 1 of the 8 items, left out of a.csv" in flat(proc.stderr)
    assert "q3" not in out.read_text() and len(out.read_text().splitlines()) == 8


def test_another_benchmark_s_micro_benchmark_is_refused(gpqa_data, tmp_path: Path):
    mb = tmp_path / "mb.json"
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "5", "--out", mb,
                       cwd=tmp_path))
    proc = mdad_cli("data", "answers", "mmlu-pro-29", "--model", "x", "--items", mb, "--out",
                    tmp_path / "a.csv", cwd=tmp_path)
    assert_user_error(proc, r"--items \S+mb\.json was selected from gpqa, another "
                      r"benchmark than mmlu-pro-29; write the answers from gpqa, or pass a "
                      r"micro-benchmark selected from mmlu-pro-29")


def test_a_cell_over_the_csv_field_limit_is_one_line_naming_file_line_and_limit(
        tmp_path: Path):
    """A cell over 131,072 characters (Python's csv default) raised _csv.Error, a
    traceback; a row of many cells is shown shortened."""
    path = tmp_path / "long.csv"
    path.write_text("item_id,correct\nq1,1\n" + "x" * 200_000 + ",1\n")
    with pytest.raises(DataError, match=rf"^{path}, line 3: a cell is longer than 131,072 "
                       r"characters \(Python's csv field limit\), not an item id or a score; "
                       r"pass a CSV file item_id,correct$"):
        read_answers_csv(path)
    path.write_text("item_id,correct\nq1,1\n" + ",".join(["y" * 100] * 1000) + "\n")
    with pytest.raises(DataError, match=r", line 3: expected item_id,correct, got 1000 "
                       r"cell\(s\) 'y{100},y{99}\.\.\.'$"):
        read_answers_csv(path)


@pytest.mark.parametrize("header", [b"", b"item_id,correct\n"])
def test_a_file_without_line_breaks_is_refused_without_reading_it_whole(tmp_path: Path,
                                                                         header: bytes):
    """A 3 GB file with no line break (sparse: NUL bytes, valid UTF-8) is refused after
    MAX_LINE_CHARS characters, in bounded memory and time, with one line."""
    import time
    import tracemalloc

    from mdad.practice.answers import MAX_LINE_CHARS

    path = tmp_path / "huge.csv"
    with open(path, "wb") as handle:
        handle.write(header)
        handle.truncate(3 << 30)
    began = time.monotonic()
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match=rf"^{path}, line {1 + bool(header)}: longer than "
                           r"1,048,576 characters, not a row item_id,correct; pass a CSV file "
                           r"item_id,correct$"):
            read_answers_csv(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert MAX_LINE_CHARS == 1 << 20
    assert peak < 40 * MAX_LINE_CHARS and time.monotonic() - began < 10, peak


def test_the_bytes_fed_are_the_bytes_parsed(tmp_path: Path):
    """`feed` sees every byte read, once, in order: a fingerprint of what was parsed."""
    path = tmp_path / "a.csv"
    text = "\ufeffitem_id,correct\r\n" + "".join(f"q{k},{k % 2}\r\n" for k in range(5000))
    path.write_bytes(text.encode())
    seen: list[bytes] = []
    assert len(read_answers_csv(path, feed=seen.append)) == 5000
    assert b"".join(seen) == path.read_bytes()


def test_a_pipe_or_a_link_to_a_device_is_refused_without_waiting(tmp_path: Path):
    import os

    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match=rf"^{fifo}: not a regular file or folder"):
        read_answers_csv(fifo)
    link = tmp_path / "zero.csv"
    link.symlink_to("/dev/zero")
    with pytest.raises(DataError, match=rf"^{link}: not a regular file or folder"):
        read_answers_csv(link)
