"""Hostile input to the lm-eval --log_samples reader: whatever a results folder holds,
reading it gives a matrix or one DataError line naming the file and the line."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import mc_record, pythia_dir, pythia_file, write_samples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdad.data import lm_eval
from mdad.data.lm_eval import MAX_LINE_BYTES, load_lm_eval_samples, read_task_lines
from mdad.errors import DataError

PATH = Path("results/model/samples_task_2024-01-01T00-00-00.jsonl")


def lines_of(records: list[object]) -> list[bytes]:
    return [json.dumps(r).encode() + b"\n" for r in records]


def assert_one_line(error: DataError, line: int | None = None) -> str:
    text = str(error)
    assert "\n" not in text and "\r" not in text
    assert text.startswith(f"{PATH}: ")
    if line is not None:
        assert text.startswith(f"{PATH}: line {line}")
    assert len(text) < 600, text
    return text


# --- the exact_match fallback reaches `mdad run` -----------------------------------------


def test_run_prints_the_exact_match_note(tmp_path):
    # pythia-14m is one model, too few for a study: the load notices come first
    data = shutil.copytree(pythia_dir(), tmp_path / "EleutherAI__pythia-14m")
    proc = subprocess.run([sys.executable, "-m", "mdad", "run", str(data), "--out",
                           str(tmp_path / "run")], capture_output=True, text=True,
                          timeout=300, check=False, env={"NO_COLOR": "1", "COLUMNS": "300",
                                                         "PATH": "/usr/bin:/bin"})
    assert "Traceback" not in proc.stderr
    assert ("note: 1 task(s) without acc scored by exact_match instead (generative records, "
            "no option log-likelihoods), for 1 model(s): metabench_gsm8k_secondary\n"
            ) in proc.stderr, proc.stderr


def test_refused_fallback_names_what_the_records_hold(tmp_path):
    gsm8k = json.loads(pythia_file("gsm8k").read_text().splitlines()[0])
    with pytest.raises(DataError) as info:
        read_task_lines(lines_of([gsm8k]), PATH, "acc_norm", fallback_metric=False)
    assert assert_one_line(info.value, 1) == (
        f"{PATH}: line 1: these records hold only exact_match (a generative task's), no "
        "'acc_norm', which is what is measured; run the model on the multiple-choice task, "
        "or use a micro-benchmark or test measured by --metric exact_match")
    assert read_task_lines(lines_of([gsm8k]), PATH, "acc_norm").metric == "exact_match"


def test_a_substitution_in_one_of_merged_files_is_noted(tmp_path):
    write_samples(tmp_path / "a", "task", [mc_record(0, [-1.0], 0, 1.0)], "2024-01-01T00-00-00")
    write_samples(tmp_path / "a", "task", [{"doc_id": 1, "exact_match": 0.0}],
                  "2024-02-01T00-00-00")
    write_samples(tmp_path / "b", "task", [mc_record(0, [-1.0], 0, 0.0)])
    matrix = load_lm_eval_samples(tmp_path)
    assert np.array_equal(matrix.correctness, [[1.0, 0.0], [0.0, np.nan]], equal_nan=True)
    assert matrix.notes == ("1 task(s) without acc scored by exact_match instead (generative "
                            "records, no option log-likelihoods), for 1 model(s): task",)
    with pytest.raises(DataError, match=r"samples_task_2024-02-01T00-00-00\.jsonl: line 1: "
                                        r"these records hold only exact_match"):
        load_lm_eval_samples(tmp_path, fallback_metric=False)


# --- repeats without a filter field ------------------------------------------------------


def test_unfiltered_repeats_that_agree_are_read_once():
    records = [mc_record(d, [-1.0, -2.0], 0, float(d % 2)) for d in range(3)]
    scores = read_task_lines(lines_of(records + copy.deepcopy(records)), PATH, "acc")
    assert scores.doc_ids == ["0", "1", "2"]
    assert scores.scores.tolist() == [0.0, 1.0, 0.0]


def test_unfiltered_repeat_that_conflicts_names_both_lines():
    records = [mc_record(d, [-1.0, -2.0], 0, 0.0) for d in range(3)]
    again = copy.deepcopy(records)
    again[2]["acc"] = 1.0
    with pytest.raises(DataError) as info:
        read_task_lines(lines_of(records + again), PATH, "acc")
    assert assert_one_line(info.value, 6) == (
        f"{PATH}: line 6: doc_id 2 has acc 1 here and 0 on line 3, and the records have no "
        "'filter' field to tell lm-eval's passes (one per filter) from a stray copy; keep one "
        "pass, or add the harness's 'filter' field to the records")


def test_filtered_passes_may_differ():
    first = [{"doc_id": d, "filter": "strict-match", "exact_match": 0.0} for d in range(2)]
    second = [{"doc_id": d, "filter": "flexible-extract", "exact_match": 1.0} for d in range(2)]
    scores = read_task_lines(lines_of(first + second), PATH, "exact_match")
    assert scores.scores.tolist() == [0.0, 0.0]


# --- long lines ----------------------------------------------------------------------------


def test_max_line_bytes_is_256_mib():
    assert MAX_LINE_BYTES == 256 * 2**20


def test_a_line_over_the_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(lm_eval, "MAX_LINE_BYTES", 1000)
    small = mc_record(0, [-1.0], 0, 1.0)
    large = mc_record(1, [-1.0], 0, 1.0, doc={"text": "x" * 5000})
    path = write_samples(tmp_path, "task", [small, large])
    with pytest.raises(DataError, match=(
            rf"^{re.escape(str(path))}: line 2 is longer than 1000 bytes, the most one record "
            r"may take \(MAX_LINE_BYTES\); no lm-eval record is that long: pass the samples "
            r"files lm-eval wrote$")):
        load_lm_eval_samples(tmp_path)
    with pytest.raises(DataError, match=rf"^{re.escape(str(PATH))}: line 2 is longer than"):
        read_task_lines(lines_of([small, large]), PATH, "acc")
    large["doc"] = {"text": "x" * 500}
    write_samples(tmp_path, "task", [small, large])
    assert load_lm_eval_samples(tmp_path).n_items == 2


def test_a_long_line_under_the_cap_is_read(tmp_path):
    text = "é" * (8 * 2**20)  # 16 MB of UTF-8 in one record
    write_samples(tmp_path, "task", [mc_record(0, [-1.0], 0, 1.0, doc={"text": text}),
                                     mc_record(1, [-1.0], 0, 0.0)])
    assert load_lm_eval_samples(tmp_path).correctness[0].tolist() == [1.0, 0.0]


@pytest.mark.slow
def test_the_real_cap_refuses_a_line_without_reading_it_whole(tmp_path):
    path = tmp_path / "model" / "samples_task_2024-01-01T00-00-00.jsonl"
    path.parent.mkdir()
    with open(path, "wb") as handle:  # sparse: 512 MiB of zero bytes and no newline
        handle.truncate(2 * MAX_LINE_BYTES)
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}: line 1 is longer than "
                                        r"256 MiB, the most one record may take"):
        load_lm_eval_samples(tmp_path)


# --- hostile values --------------------------------------------------------------------------


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(("line", "message"), [
    (b'{"doc_id": 0, "acc": ' + DEEP.encode() + b"}\n", r"JSON nested too deeply"),
    (b'{"doc_id": 0, "acc": 1.0, "doc": "\xff\xfe"}\n', r"is not UTF-8 text;"),
    (b"\x1f\x8b\x08\x00rest\n", r"is not UTF-8 text \(gzip-compressed\?\)"),
    (b'{"doc_id": 0, "acc": NaN}\n', r"acc is nan, not a score in \[0, 1\]"),
    (b'{"doc_id": 0, "acc": Infinity}\n', r"acc is inf, not a score"),
    (b'{"doc_id": 0, "acc": 1e999}\n', r"acc is inf, not a score"),
    (b'{"doc_id": 0, "acc": ' + b"9" * 400 + b"}\n", r"acc is 9+\.\.\.9+, not a score"),
    (b'{"doc_id": ' + b"9" * 5000 + b', "acc": 1}\n', r"not valid JSON \(Exceeds the limit"),
    (b'{"doc_id": ' + b"9" * 30 + b', "acc": 1}\n', r"doc_id is 9{30}; lm-eval"),
    (b'{"doc_id": 1.0, "acc": 1}\n', r"doc_id is 1\.0;"),
    (b'{"doc_id": NaN, "acc": 1}\n', r"doc_id is nan;"),
    (b'{"doc_id": false, "acc": 1}\n', r"doc_id is False;"),
    (b'{"doc_id": [[[[[[1]]]]]], "acc": 1}\n', r"doc_id is \[\[\[\[\.\.\.\]\]\]\];"),
    (b'{"doc_id": "a\\u0000b", "acc": 1}\n', r"doc_id is 'a\\x00b';"),
    (b'{"doc_id": "\\ud800", "acc": 1}\n', r"doc_id is '\\ud800';"),
    (b'{"doc_id": "' + b"x" * 300 + b'", "acc": 1}\n', r"doc_id is 'x+\.\.\.x+';"),
    (b'{"doc_id": 0, "acc": "' + b"y" * 10**6 + b'"}\n', r"acc is 'y+\.\.\.y+', not a"),
    (b'{"doc_id": 0, "acc": [1]}\n', r"acc is \[1\], not a score"),
    (b'{"doc_id": 0, "acc": 1, "filter": ["none"]}\n', r"filter is \['none'\]; lm-eval writes"),
    (b'{"doc_id": 0, "acc": 1, "filtered_resps": [["1' + b"0" * 400 + b'", "False"]]}\n',
     r"an option's log-likelihood is inf, so its confidence is unknown"),
    (b'{"doc_id": 0, "acc": 1, "filtered_resps": [[1' + b"0" * 400 + b', "False"]]}\n',
     r"an option's log-likelihood is inf, so its confidence is unknown"),
    (b'{"doc_id": 0, "metrics": ["' + b"m" * 10**5 + b'"]}\n', r"no 'acc' field; .* have "
                                                               r"\['m+\.\.\.m+'\];"),
])
def test_hostile_line_is_one_data_error(line, message):
    good = json.dumps(mc_record(5, [-1.0], 0, 1.0)).encode() + b"\n"
    with pytest.raises(DataError) as info:
        read_task_lines([good, line], PATH, "acc")
    text = assert_one_line(info.value, 2)
    assert re.search(message, text), text


@pytest.mark.parametrize("change", [
    {"filtered_resps": [[[1.0, 2.0], "False"]]},  # no number: no log-likelihoods
    {"target": "9" * 5000},  # beyond int()'s digits: no gold option
    {"doc": {"answer": "9" * 5000}},
    {"arguments": {"gen_args_0": {"arg_1": json.loads("[" * 900 + "]" * 900)}}},
    {"doc": {"label": json.loads("[" * 900 + "]" * 900)}},
])
def test_odd_fields_beside_the_score_are_read_without_confidence(change):
    record = mc_record(0, [-1.0, -2.0], "unknown", 1.0)
    record.update(change)
    scores = read_task_lines(lines_of([record]), PATH, "acc")
    assert scores.scores.tolist() == [1.0]
    assert np.isnan(scores.confidence).all()


# --- mutated records ----------------------------------------------------------------------

SEEDS = [
    mc_record(0, [-1.25, -0.5, -3.0], 1, 1.0, doc={"answer": "1", "option1": "a",
                                                   "option2": "b"}),
    {**mc_record(1, [-2.0, -1.0], "B", 0.0), "acc_norm": 1.0, "filter": "none"},
    {"doc_id": 2, "doc": {"question": "2+2"}, "target": "4", "arguments": [["Q", "A"]],
     "resps": [["4"]], "filtered_resps": ["4"], "exact_match": 1.0},
]

HOSTILE_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**18),
    st.integers(min_value=10**309, max_value=10**320),  # beyond float
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["NaN", "-Infinity", "1e999", "9" * 5000, "", " ", "\x00", "\ud800",
                     "0.5", "(A)", "gen_args_0"]),
)
HOSTILE_VALUES = st.recursive(
    HOSTILE_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8,
)


def deep(levels: int) -> list:
    nested: list = []
    for _ in range(levels):
        nested = [nested]
    return nested


def paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """The paths to values inside `value` (dict keys and list indices), 6 deep."""
    found = [prefix]
    if len(prefix) > 5:  # not into a deeply nested value a mutation put there
        return found
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for k, inner in enumerate(value):
            found += paths(inner, (*prefix, k))
    return found


@st.composite
def mutated_lines(draw) -> list[bytes]:
    """A file of one seed's records (doc_ids 0, 1, ...; the pass maybe repeated, as per
    filter), some records changed at a random place (replaced, deleted, deeply nested)
    and some lines changed byte by byte."""
    seed = draw(st.sampled_from(SEEDS))
    records = [{**copy.deepcopy(seed), "doc_id": k} for k in range(draw(st.integers(1, 3)))]
    records += copy.deepcopy(records) if draw(st.booleans()) else []
    for record in records:
        for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
            # the top-level fields (doc_id, the scores, filter) as often as all the rest
            where = draw(st.sampled_from(paths(record)[1:]) | st.sampled_from(
                [(key,) for key in record]))
            *parents, last = where
            holder = record
            for step in parents:
                holder = holder[step]
            action = draw(st.sampled_from(["replace", "delete", "nest"]))
            if action == "delete":
                del holder[last]
            elif action == "nest":
                holder[last] = deep(3000) if draw(st.booleans()) else [[holder[last]]]
            else:
                holder[last] = draw(HOSTILE_VALUES)
    lines = []
    for record in records:
        try:
            line = json.dumps(record, allow_nan=True).encode("utf-8", "surrogatepass")
        except (RecursionError, ValueError):
            line = b'{"doc_id": 0, "acc": ' + DEEP.encode() + b"}"
        if draw(st.integers(0, 3)) == 0:
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(st.binary(max_size=4)) + line[at + draw(st.integers(0, 3)):]
        lines.append(line + b"\n")
    return lines


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=mutated_lines(), metric=st.sampled_from(["acc", "acc_norm", "exact_match"]),
       fallback=st.booleans())
def test_mutated_records_give_scores_or_one_data_error(lines, metric, fallback):
    try:
        scores = read_task_lines(lines, PATH, metric, fallback_metric=fallback)
    except DataError as error:
        assert_one_line(error)
        assert re.match(rf"{re.escape(str(PATH))}: (line \d+|no records|the records after)",
                        str(error)), str(error)
        return
    n = len(scores.doc_ids)
    assert n == len(set(scores.doc_ids)) > 0
    assert scores.scores.shape == scores.confidence.shape == (n,)
    assert ((scores.scores >= 0) & (scores.scores <= 1)).all()
    known = scores.confidence[~np.isnan(scores.confidence)]
    assert ((known >= 0) & (known <= 1)).all()
    assert all(doc.isprintable() and 0 < len(doc) <= 200 for doc in scores.doc_ids)


def test_the_data_s_sha256_is_of_the_bytes_parsed(tmp_path, monkeypatch):
    """The matrix's sha256 (the adaptive test's fingerprint, a study's data digest) is
    hashed from the bytes parsed, the same value as hashing the files after: a file
    rewritten between the two cannot be fingerprinted as what was not read."""
    from mdad.data.files import files_sha256

    folder = tmp_path / "pythia"
    shutil.copytree(pythia_dir(), folder)  # shared data is read-only
    files = sorted(folder.rglob("samples_*.jsonl"))
    assert load_lm_eval_samples(folder).sha256 == files_sha256(files, folder)

    parse = lm_eval.read_task_lines

    def rewritten_after_parsing(lines, path, *args, **kwargs):
        scores = parse(lines, path, *args, **kwargs)
        Path(path).write_bytes(b"rewritten\n")  # no record: unreadable if parsed
        return scores

    monkeypatch.setattr(lm_eval, "read_task_lines", rewritten_after_parsing)
    originals = {f: f.read_bytes() for f in files}
    digest = load_lm_eval_samples(folder).sha256
    for f, data in originals.items():
        f.write_bytes(data)
    assert digest == files_sha256(files, folder)
