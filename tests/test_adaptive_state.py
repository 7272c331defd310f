"""The adaptive test's state file held to the core's standard (issue 34): one schema
refuses every damaged field before numpy sees it, one lock per state keeps two writers
from losing an update, no planted link is written through, the fingerprint reads only
the batch's files, and a full answers CSV serves every round."""

from __future__ import annotations

import ast
import copy
import json
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import GPQA_CSV, MDAD, assert_ok, assert_user_error, flat, mdad_cli, shared_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdad.errors import DataError
from mdad.practice.adaptive import AdaptiveTest, start_adaptive_test
from mdad.practice.adaptive_state import PARAMETER_BOUND, STATE_SCHEMA

TASK = "leaderboard_gpqa_main"


@pytest.fixture(scope="module")
def saved_state(gpqa_data, tmp_path_factory) -> dict:
    """A real state after one applied round: every field has values to damage."""
    test = start_adaptive_test(gpqa_data, budget=20, batch=5)
    answers = tmp_path_factory.mktemp("answers") / "round1.csv"
    answers.write_text("item_id,correct\n" + "".join(f"{i},{k % 2}\n"
                                                    for k, i in enumerate(test.pending)))
    test.apply_results(answers)
    test.next_items()
    data = test.to_json()
    assert data["round"] == 1 and len(data["answers"]) == 5 and len(data["pending"]) == 5
    return data


def checked(data: object) -> AdaptiveTest:
    """`from_json` of `data` as a file would hold it, numpy's warnings as errors; an
    accepted state must also work: estimate, next batch, lm-eval file, round trip."""
    text = json.dumps(data)  # NaN and Infinity as Python's json writes and reads them
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        test = AdaptiveTest.from_json(json.loads(text), "state.json")
        test.estimate()
        test.next_items()
        if test.lm_eval_items is not None:
            test.samples_json()
        AdaptiveTest.from_json(json.loads(json.dumps(test.to_json())), "again")
    return test


# ------------------------------------------------------------------ the schema

JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-10**300, max_value=10**300)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
    | st.sampled_from([1e300, -1e300, math.inf, math.nan, "\x1b[2J", "a/1", "0" * 64]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=2),
    max_leaves=6)
NOT_A_LIST = JUNK.filter(lambda v: not isinstance(v, list))
NOT_A_STR = JUNK.filter(lambda v: not isinstance(v, str))
NOT_A_NUMBER = JUNK.filter(lambda v: not isinstance(v, int | float) or isinstance(v, bool))
NOT_AN_INT = JUNK.filter(lambda v: not isinstance(v, int) or isinstance(v, bool))
NOT_FINITE = st.sampled_from([math.inf, -math.inf, math.nan])
CONTROL = st.text(max_size=5).map(lambda s: s + "\x1b[31m")


def beyond(bound: float) -> st.SearchStrategy:
    """Numbers outside [-bound, bound]: huge floats and integers, and non-finite."""
    return (st.floats(min_value=bound, exclude_min=True, allow_infinity=False)
            | st.floats(max_value=-bound, exclude_max=True, allow_infinity=False)
            | st.integers(min_value=int(bound) + 1, max_value=10**400)
            | st.integers(min_value=-10**400, max_value=-int(bound) - 1) | NOT_FINITE)


BAD_SCORE = NOT_A_NUMBER | NOT_FINITE | st.floats(min_value=1, exclude_min=True) | st.floats(
    max_value=-1e-300) | st.integers(min_value=2) | st.integers(max_value=-1)
BAD_PARAMETER = NOT_A_NUMBER | beyond(PARAMETER_BOUND)
BAD_ITEM = NOT_A_STR | CONTROL | st.text(max_size=6).map(lambda s: "no such item " + s)


def _set(path: tuple, value: object):
    def mutate(data: dict) -> dict:
        data = copy.deepcopy(data)
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return data
    return mutate


# (field, where in it, strategy of values wrong for it whatever the other fields hold)
WRONG = [
    ("format", (), JUNK.filter(lambda v: v not in ("mdad-adaptive/1", "mdad-adaptive/2"))),
    ("mdad_version", (), NOT_A_STR | CONTROL | st.just("")),
    ("dataset", (), NOT_A_STR | CONTROL | st.just("")),
    ("sha256", (), NOT_A_STR | st.sampled_from(["0" * 63, "G" * 64, "A" * 64, "0" * 65])),
    ("method", (), JUNK.filter(lambda v: v not in ("adaptive", "adaptive-md", "adaptive-cv"))),
    ("choice", (), JUNK.filter(lambda v: v is not None)),  # adaptive (1-D) chooses nothing
    ("metric", (), NOT_A_STR | CONTROL),
    ("item_ids", (), NOT_A_LIST | st.just([])),
    ("item_ids", (0,), NOT_A_STR | CONTROL | st.just("")),
    ("item_ids", (1,), st.just("DUPLICATE-OF-0")),
    ("lm_eval_items", (), NOT_A_LIST.filter(lambda v: v is not None) | st.just([])),
    ("lm_eval_items", (3,), NOT_A_STR | st.sampled_from(
        ["noslash", f"{TASK}/x", f"{TASK}/1.5", f"{TASK}/-1", f"{TASK}/", "/3", "a b/3",
         f"{TASK}/\u0663", f"{TASK}/1" + "0" * 20])),
    ("discrimination", (), NOT_A_LIST),
    ("discrimination", (2,), NOT_A_LIST | st.just([]) | st.just([1.0, 1.0])),
    ("discrimination", (2, 0), BAD_PARAMETER),
    ("difficulty", (), NOT_A_LIST),
    ("difficulty", (7,), BAD_PARAMETER),
    ("budget", (), NOT_AN_INT | st.integers(max_value=0) | st.integers(min_value=449)),
    ("batch", (), NOT_AN_INT | st.integers(max_value=0) | st.integers(min_value=21)),
    ("target_se", (), NOT_A_NUMBER.filter(lambda v: v is not None) | NOT_FINITE
     | st.floats(max_value=0, allow_infinity=False) | st.integers(max_value=0)),
    ("cv_answered", (), NOT_A_LIST | st.just([]) | st.just([0, 10, 5, 15, 20])),
    ("cv_answered", (1,), NOT_AN_INT | st.integers(max_value=-1) | st.integers(min_value=21)),
    ("cv_error", (), NOT_A_LIST | st.just([0.1])),
    ("cv_error", (2,), BAD_SCORE),
    ("answers", (), NOT_A_LIST),
    ("answers", (0,), NOT_A_LIST | st.lists(JUNK, max_size=1) | st.lists(JUNK, min_size=3,
                                                                          max_size=4)),
    ("answers", (0, 0), BAD_ITEM),
    ("answers", (0, 1), BAD_SCORE),
    ("pending", (), NOT_A_LIST),
    ("pending", (0,), BAD_ITEM | st.just("ANSWERED") | st.just("DUPLICATE-OF-1")),
    ("applied", (), NOT_A_LIST),
    ("applied", (0,), NOT_A_STR | st.sampled_from(["", "0" * 63, "A" * 64, "g" * 64])),
    ("round", (), NOT_AN_INT | st.integers(max_value=0) | st.integers(min_value=2)),
]


def _placeholders(data: dict, value: object) -> object:
    """Stand-ins that need the state: an answered item, another's duplicate."""
    if value == "ANSWERED":
        return data["answers"][0][0]
    if value == "DUPLICATE-OF-0":
        return data["item_ids"][0]
    if value == "DUPLICATE-OF-1":
        return data["pending"][1]
    return value


@pytest.mark.slow
@pytest.mark.filterwarnings("error")
@settings(max_examples=600, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(case=st.sampled_from(WRONG).flatmap(
    lambda c: st.tuples(st.just(c[0]), st.just(c[1]), c[2])))
def test_a_wrong_type_or_range_names_its_field(saved_state, case):
    """Each field, and a value nested in it, replaced by a wrong type, a string where a
    list belongs, an unhashable where an item belongs, a huge or non-finite number: a
    one-line DataError naming that very field, nothing else, no numpy warning."""
    field, where, value = case
    data = _set((field, *where), _placeholders(saved_state, value))(saved_state)
    with pytest.raises(DataError) as caught:
        checked(data)
    message = str(caught.value)
    assert message.startswith(f"state.json: field {field!r} "), message
    assert message.endswith("; start a new test") and "\n" not in message


def _paths(data: object, prefix: tuple = ()) -> list[tuple]:
    """Every place in `data`, a few per list (first, second and last)."""
    places = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            places += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for k in sorted({0, 1, len(data) - 1} & set(range(len(data)))):
            places += _paths(data[k], (*prefix, k))
    return places


@pytest.mark.slow
@pytest.mark.filterwarnings("error")
@settings(max_examples=600, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(min_value=0), value=JUNK, drop=st.booleans())
def test_any_damage_is_a_data_error_or_a_working_state(saved_state, index, value, drop):
    """Any value anywhere (or a field removed, or one added): either a DataError naming a
    field of the schema, or a state that works without a numpy warning, never another
    exception."""
    places = _paths(saved_state)
    path = places[index % len(places)]
    if drop and len(path) == 1:
        data = {k: v for k, v in saved_state.items() if k != path[0]}
    else:
        data = _set(path, value)(saved_state)
    try:
        checked(data)
    except DataError as exc:
        named = str(exc).split("field ", 1)[1].split(" ", 1)[0].strip("'")
        assert named in STATE_SCHEMA, str(exc)


def test_a_format_1_state_reads_with_the_older_interval_and_says_so(saved_state):
    older = {k: v for k, v in saved_state.items() if k != "cv_calibration"}
    test = AdaptiveTest.from_json({**older, "format": "mdad-adaptive/1"}, "state.json")
    assert test.cv_calibration is None
    assert "format /1 state" in test.estimate().interval_how
    with pytest.raises(DataError, match="'cv_calibration' must be null, or one calibration"):
        AdaptiveTest.from_json({**saved_state, "format": "mdad-adaptive/1"}, "state.json")
    with pytest.raises(DataError, match="'cv_calibration' must be null, or one calibration"):
        AdaptiveTest.from_json({**saved_state, "cv_calibration": [[0.0] * 19]}, "state.json")


def test_an_extra_or_missing_field_is_named(saved_state):
    with pytest.raises(DataError, match=r"^state.json: field 'extra' is not part of an "
                       r"mdad-adaptive/3 state; start a new test$"):
        AdaptiveTest.from_json({**saved_state, "extra": 1}, "state.json")
    with pytest.raises(DataError, match=r"^state.json: field 'pending' is missing; start a new "
                       r"test$"):
        AdaptiveTest.from_json({k: v for k, v in saved_state.items() if k != "pending"},
                               "state.json")


@pytest.mark.parametrize(("field", "value"), [
    ("discrimination", "1e300"), ("answers", [[["x"], 1]]), ("pending", [["x"]]),
    ("pending", [{"x": 1}]), ("lm_eval_items", "ints"), ("lm_eval_items", "noslash"),
    ("lm_eval_items", "notint")])
def test_the_reviews_damaged_states_are_one_line_each(saved_state, tmp_path, field, value):
    """The review's cases through the real CLI: exit 2, one line naming the field, no
    numpy warning on stderr (the discrimination 1e300 gave warnings and an ability
    standard error of 0.000)."""
    data = copy.deepcopy(saved_state)
    n = len(data["item_ids"])
    if value == "1e300":
        data["discrimination"][0][0] = 1e300
    elif field == "lm_eval_items":
        data[field] = {"ints": list(range(n)), "noslash": [f"x{k}" for k in range(n)],
                       "notint": [f"{TASK}/d{k}" for k in range(n)]}[value]
    else:
        data[field] = value
    state = tmp_path / "state.json"
    state.write_text(json.dumps(data))
    for command in ("estimate", "next"):
        proc = mdad_cli("adaptive", command, state,
                        *([tmp_path / "r.csv"] if command == "next" else []), cwd=tmp_path)
        assert_user_error(proc, rf"^mdad: error: \S+state\.json: field '{field}' .*; start a "
                          "new test$")
        assert "Warning" not in proc.stderr


def test_a_state_too_large_or_too_deep_is_refused(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataError, match=r"deep\.json: not an adaptive test state \(nested "
                       r"too deeply\); start a new test$"):
        AdaptiveTest.load(deep)
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(65 << 20)  # sparse: no disk used
    with pytest.raises(DataError, match=r"big\.json: over 64 MB, not an adaptive test state"):
        AdaptiveTest.load(big)


def test_real_fits_lie_well_inside_the_bound(gpqa_data):
    """The bound is no limit for real data (see `PARAMETER_BOUND` for MMLU-Pro's)."""
    test = start_adaptive_test(gpqa_data, budget=5, method="adaptive-md")
    assert np.abs(test.discrimination).max() < PARAMETER_BOUND / 10
    assert np.abs(test.difficulty).max() < PARAMETER_BOUND / 10


# ------------------------------------------------------------ the CLI's files

def _start(tmp_path: Path, *extra: object, dataset: object = "gpqa") -> Path:
    state = tmp_path / "state.json"
    assert_ok(mdad_cli("adaptive", "start", dataset, "--budget", "6", "--batch", "3",
                       "--out", state, *extra, cwd=tmp_path))
    return state


def _batch_answers(state: Path, gpqa_data, path: Path, *, everything: bool = False) -> dict:
    """A CSV of model 2's answers to the pending batch (or to every item)."""
    matrix = gpqa_data.matrix
    truth = {str(item): int(matrix.correctness[2, k]) for k, item in enumerate(matrix.item_ids)}
    items = truth if everything else json.loads(state.read_text())["pending"]
    path.write_text("item_id,correct\n" + "".join(f"{i},{truth[i]}\n" for i in items))
    return truth


def _consistent(state: Path) -> dict:
    """The state loads, and its batch file lists exactly its pending batch."""
    data = json.loads(state.read_text())
    test = AdaptiveTest.from_json(data)
    batch = state.with_suffix(".samples.json")
    if test.pending:
        assert json.loads(batch.read_text()) == test.samples_json()
    assert not state.is_symlink()
    return data


@pytest.fixture
def holder(tmp_path):
    """A process holding a state's lock, as a running `next` or `start` would."""
    processes = []

    def hold(state: Path) -> subprocess.Popen:
        code = ("import sys; from mdad.safe_io import FileLock; "
                f"FileLock({str(state.with_name('.' + state.name + '.lock'))!r}, 'x')"
                ".acquire(); print('held', flush=True); sys.stdin.read()")
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        processes.append(proc)
        assert proc.stdout.readline() == "held\n"
        return proc

    yield hold
    for proc in processes:
        if not proc.stdin.closed:
            proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


def test_a_held_lock_stops_next_and_start_at_once_naming_the_holder(tmp_path, gpqa_data,
                                                                    holder):
    state = _start(tmp_path)
    _batch_answers(state, gpqa_data, tmp_path / "answers.csv")
    before = {p: p.read_bytes() for p in (state, state.with_suffix(".samples.json"))}
    held = holder(state)
    for args in (("next", state, tmp_path / "answers.csv"),
                 ("start", "gpqa", "--budget", "4", "--out", state, "--force")):
        began = time.monotonic()
        proc = mdad_cli("adaptive", *args, cwd=tmp_path)
        assert time.monotonic() - began < 30  # stops at once, never waits
        assert_user_error(proc, rf"^mdad: error: the adaptive test \S+state\.json is in use "
                          rf"by process {held.pid} \(lock \S+\.state\.json\.lock\); wait for "
                          "it to finish")
    assert {p: p.read_bytes() for p in before} == before
    held.stdin.close()
    held.wait(timeout=30)
    assert_ok(mdad_cli("adaptive", "next", state, tmp_path / "answers.csv", cwd=tmp_path))
    assert _consistent(state)["round"] == 1


# `mdad` whose `next` waits inside the lock, in apply_results, until a file appears:
# the test holds a real `next`'s critical section open (argv: inside, release, mdad args)
_HELD_IN_APPLY = """
import sys, time
from pathlib import Path
import mdad.practice.adaptive as adaptive
inside, release = Path(sys.argv[1]), Path(sys.argv[2])
apply = adaptive.AdaptiveTest.apply_results
def held(*args, **kwargs):
    inside.write_text("in")
    deadline = time.monotonic() + 60
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return apply(*args, **kwargs)
adaptive.AdaptiveTest.apply_results = held
from mdad.cli.app import main
sys.argv = ["mdad", *sys.argv[3:]]
main()
"""


def test_two_concurrent_next_record_one_answer_set(tmp_path, gpqa_data):
    """Two real `next` with the same batch's answers, the second started while the
    first is inside its read-modify-write: the second stops at once naming the first's
    process and changes nothing; the first records the answers once; the state and its
    batch file agree."""
    state = _start(tmp_path)
    answers = tmp_path / "answers.csv"
    _batch_answers(state, gpqa_data, answers)
    inside, release = tmp_path / "inside", tmp_path / "release"
    first = subprocess.Popen([sys.executable, "-c", _HELD_IN_APPLY, str(inside), str(release),
                              "adaptive", "next", str(state), str(answers)], cwd=tmp_path,
                             env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not inside.exists():
            assert time.monotonic() < deadline and first.poll() is None, first.stderr.read()
            time.sleep(0.02)
        before = {p: p.read_bytes() for p in (state, state.with_suffix(".samples.json"))}
        assert_user_error(mdad_cli("adaptive", "next", state, answers, cwd=tmp_path),
                          rf"^mdad: error: the adaptive test \S+state\.json is in use by "
                          rf"process {first.pid} \(lock \S+\.state\.json\.lock\)")
        assert {p: p.read_bytes() for p in before} == before
    finally:
        release.write_text("go")
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert "recorded 3 answers (round 1)" in flat(out)
    data = _consistent(state)
    assert data["round"] == 1 and len(data["answers"]) == 3 and len(data["pending"]) == 3


@pytest.mark.slow
def test_next_during_a_real_start_stops_naming_it(tmp_path):
    """`start --force` holds the lock through its fit (MMLU-Pro's 29 models: seconds):
    a `next` meanwhile stops naming it, and the new test is whole when start ends."""
    state = _start(tmp_path)
    lock = tmp_path / ".state.json.lock"
    start = subprocess.Popen([str(MDAD), "adaptive", "start", "mmlu-pro-29",
                              "--budget", "4", "--out", str(state), "--force"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while lock.read_text().strip() != str(start.pid):
            assert time.monotonic() < deadline and start.poll() is None
            time.sleep(0.05)
        assert_user_error(mdad_cli("adaptive", "next", state, tmp_path / "x.csv",
                                   cwd=tmp_path),
                          rf"in use by process {start.pid} ")
    finally:
        assert start.wait(timeout=600) == 0, start.stderr.read()
        start.stderr.close()
    data = json.loads(state.read_text())
    assert data["round"] == 0 and data["budget"] == 4 and data["dataset"] == "mmlu-pro-29"
    written = sorted(state.parent.glob("state.*.*"), key=lambda p: p.stat().st_mtime)[-1]
    pending = (written.read_text().split() if written.suffix == ".txt" else
               AdaptiveTest.from_json(data).samples_json())
    assert pending == (data["pending"] if written.suffix == ".txt"
                       else json.loads(written.read_text()))


def test_no_planted_link_is_written_through(tmp_path, gpqa_data):
    """A link at the state is refused (a state is never read through a link); links
    planted at a leftover temporary and the batch file are removed or replaced; a file
    named like an old mdad's fixed temporary is not mdad's and is left as it is; every
    victim stays as it was. A link as the lock file is refused."""
    state = _start(tmp_path)
    _batch_answers(state, gpqa_data, tmp_path / "answers.csv")
    victims = {name: tmp_path / f"victim-{name}.txt" for name in ("state", "tmp", "left",
                                                                   "batch", "lock")}
    for victim in victims.values():
        victim.write_text("precious\n")
    real = state.read_bytes()
    (tmp_path / "victim-state.txt").write_bytes(real)  # a state it could read
    kept = {v: v.read_bytes() for v in victims.values()}
    batch = state.with_suffix(".samples.json")
    state.unlink()
    state.symlink_to(victims["state"])
    for args in (("next", state, tmp_path / "answers.csv"), ("estimate", state)):
        assert_user_error(mdad_cli("adaptive", *args, cwd=tmp_path),
                          r"state\.json: a symbolic link; a state is read from the file "
                          r"itself, never through a link; pass the file it points to$")
    assert state.is_symlink() and {v: v.read_bytes() for v in victims.values()} == kept
    state.unlink()
    state.write_bytes(real)
    batch.unlink()
    batch.symlink_to(victims["batch"])
    (tmp_path / ".state.json.tmp").symlink_to(victims["tmp"])
    (tmp_path / ".state.json.x1y2z3w4.mdad-tmp").symlink_to(victims["left"])
    assert_ok(mdad_cli("adaptive", "next", state, tmp_path / "answers.csv", cwd=tmp_path))
    assert {v: v.read_bytes() for v in victims.values()} == kept
    assert not state.is_symlink() and not batch.is_symlink()
    assert _consistent(state)["round"] == 1
    assert sorted(p.name for p in tmp_path.glob(".*")) == [".state.json.lock",
                                                           ".state.json.tmp"]
    assert (tmp_path / ".state.json.tmp").is_symlink()  # not mdad's: left alone

    for target in (state, batch):  # start --force over links
        target.unlink()
        target.symlink_to(victims["state" if target == state else "batch"])
    assert_ok(mdad_cli("adaptive", "start", "gpqa", "--budget", "4", "--out", state,
                       "--force", cwd=tmp_path))
    assert {v: v.read_bytes() for v in victims.values()} == kept
    assert _consistent(state)["round"] == 0

    lock = tmp_path / ".state.json.lock"
    lock.unlink()
    lock.symlink_to(victims["lock"])
    assert_user_error(mdad_cli("adaptive", "next", state, tmp_path / "answers.csv",
                               cwd=tmp_path), r"\.state\.json\.lock: cannot open the lock file")
    assert victims["lock"].read_bytes() == kept[victims["lock"]]


def test_no_link_is_written_through_for_a_list_of_ids(tmp_path, gpqa_data):
    """A dataset without lm-eval names writes its batch as ``.items.txt``."""
    matrix = gpqa_data.matrix
    rows = ["item_id," + ",".join(str(m) for m in matrix.model_names)]
    rows += [f"q{j}," + ",".join(str(int(v)) for v in matrix.correctness[:, j])
             for j in range(40)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    state = _start(tmp_path, dataset=tmp_path / "data.csv")
    batch = state.with_suffix(".items.txt")
    pending = batch.read_text().split()
    (tmp_path / "answers.csv").write_text("item_id,correct\n" + "".join(
        f"{i},1\n" for i in pending))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    batch.unlink()
    batch.symlink_to(victim)
    assert_ok(mdad_cli("adaptive", "next", state, tmp_path / "answers.csv", cwd=tmp_path))
    assert victim.read_text() == "precious\n" and not batch.is_symlink()
    assert batch.read_text().split() == json.loads(state.read_text())["pending"]


# -------------------------------------------------------------- the fingerprint

# `mdad` with every file it opens recorded (the "open" audit event of open and os.open)
_AUDITED = """
import atexit, sys
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
atexit.register(lambda: sys.stderr.write("OPENED " + repr(opened) + "\\n"))
from mdad.cli.app import main
sys.argv = ["mdad", *sys.argv[1:]]
main()
"""


def test_the_fingerprint_reads_only_the_batchs_files(tmp_path, gpqa_data):
    """A results folder with a 2 GB unrelated file, a pipe (opening it would hang) and
    another task's samples: `next` opens only the batch's sample file, streamed."""
    state = _start(tmp_path)
    docs = json.loads(state.with_suffix(".samples.json").read_text())[TASK]
    model = tmp_path / "results" / "org__model"
    model.mkdir(parents=True)
    mine = model / f"samples_{TASK}_2024-06-01T00-00-00.000000.jsonl"
    mine.write_text("".join(json.dumps({"doc_id": d, "acc_norm": 1.0}) + "\n" for d in docs))
    other = model / "samples_leaderboard_other_2024-06-01T00-00-00.000000.jsonl"
    other.write_text(json.dumps({"doc_id": 0, "acc_norm": 1.0}) + "\n")
    with open(model / "results_2024-06-01.json", "wb") as handle:
        handle.truncate(2 << 30)  # sparse
    os.mkfifo(model / "notes.txt")
    proc = subprocess.run([sys.executable, "-c", _AUDITED, "adaptive", "next", str(state),
                           str(tmp_path / "results")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    opened = ast.literal_eval(proc.stderr.rsplit("OPENED ", 1)[1])
    read = {Path(p).name for p in opened if str(tmp_path / "results") in p}
    assert read == {mine.name}, read
    data = _consistent(state)
    assert data["round"] == 1 and all(v == 1.0 for _, v in data["answers"])


def test_results_scored_by_another_metric_are_refused(tmp_path):
    """GPQA's test is on acc_norm: records holding only exact_match are not scored by it
    (the estimate said 100.0 points)."""
    state = _start(tmp_path)
    docs = json.loads(state.with_suffix(".samples.json").read_text())[TASK]
    model = tmp_path / "results" / "org__model"
    model.mkdir(parents=True)
    (model / f"samples_{TASK}_2024-06-01T00-00-00.000000.jsonl").write_text("".join(
        json.dumps({"doc_id": d, "filtered_resps": ["A"], "exact_match": 1.0}) + "\n"
        for d in docs))
    saved = state.read_bytes()
    line = assert_user_error(mdad_cli("adaptive", "next", state, tmp_path / "results",
                                      cwd=tmp_path), r"samples_leaderboard_gpqa_main_\S+")
    assert "exact_match" in line and "acc_norm" in line
    assert state.read_bytes() == saved


# ------------------------------------------------------------- a full answers CSV

def test_a_full_answers_csv_serves_every_round(tmp_path, gpqa_data):
    """Issue 38: the same CSV of all the model's answers, given every round, records
    each batch once; last round's batch-only CSV again is still refused."""
    state = _start(tmp_path)
    truth = _batch_answers(state, gpqa_data, tmp_path / "round1.csv")
    _batch_answers(state, gpqa_data, tmp_path / "all.csv", everything=True)
    assert_ok(mdad_cli("adaptive", "next", state, tmp_path / "round1.csv", cwd=tmp_path))
    assert_user_error(mdad_cli("adaptive", "next", state, tmp_path / "round1.csv",
                               cwd=tmp_path),
                      r"round1\.csv: these results were applied already \(round 1\) and do "
                      r"not hold the pending batch; run the model on the new batch first$")
    proc = mdad_cli("adaptive", "next", state, tmp_path / "all.csv", cwd=tmp_path)
    assert_ok(proc)
    assert "all.csv has 445 items that are not in the batch; they are not recorded" in flat(
        proc.stderr)
    data = json.loads(state.read_text())
    assert data["round"] == 2 and len(data["answers"]) == 6
    assert {i: truth[i] for i, _ in data["answers"]} == {i: v for i, v in data["answers"]}
    assert len(set(data["applied"])) == 2

    # a full CSV from round 1 on: accepted in both rounds, each answer once
    again = tmp_path / "again"
    again.mkdir()
    state = _start(again)
    for round_ in (1, 2):
        proc = mdad_cli("adaptive", "next", state, tmp_path / "all.csv", cwd=again)
        assert_ok(proc)
        data = json.loads(state.read_text())
        assert data["round"] == round_ and len(data["answers"]) == 3 * round_
    assert data["applied"][0] == data["applied"][1]
    assert {i: truth[i] for i, _ in data["answers"]} == {i: v for i, v in data["answers"]}
    assert "FINAL" in flat(proc.stdout)
    assert_user_error(mdad_cli("adaptive", "next", state, tmp_path / "all.csv", cwd=again),
                      r"the test is finished \(6 items answered\)")


def test_last_rounds_folder_again_is_refused_whichever_tasks_are_pending(tmp_path,
                                                                         gpqa_data):
    """A dataset of two lm-eval tasks: the fingerprint covers the test's tasks' sample
    files, so last round's unchanged folder is named as applied already even when the
    new batch asks for the other task."""
    matrix = gpqa_data.matrix
    ids = [f"task_{'ab'[j % 2]}/{j // 2}" for j in range(40)]
    rows = ["item_id," + ",".join(str(m) for m in matrix.model_names)]
    rows += [f"{item}," + ",".join(str(int(v)) for v in matrix.correctness[:, j])
             for j, item in enumerate(ids)]
    (tmp_path / "two.csv").write_text("\n".join(rows) + "\n")
    state = tmp_path / "state.json"
    assert_ok(mdad_cli("adaptive", "start", tmp_path / "two.csv", "--budget", "8", "--batch",
                       "1", "--out", state, cwd=tmp_path))
    model = tmp_path / "results" / "m"
    model.mkdir(parents=True)
    batch = json.loads(state.with_suffix(".samples.json").read_text())
    for task, docs in batch.items():
        (model / f"samples_{task}_2024-06-01T00-00-00.000000.jsonl").write_text("".join(
            json.dumps({"doc_id": d, "acc": 1.0}) + "\n" for d in docs))
    assert_ok(mdad_cli("adaptive", "next", state, model, cwd=tmp_path))
    for _ in range(6):  # until a batch of the other task is pending (or the budget ends)
        pending = json.loads(state.with_suffix(".samples.json").read_text())
        assert_user_error(mdad_cli("adaptive", "next", state, model, cwd=tmp_path),
                          r"these results were applied already \(round \d\)")
        if set(pending) != set(batch):
            break
        # answer it in a new file, as the next lm-eval run would
        stamp = f"2024-06-0{len(json.loads(state.read_text())['answers']) + 1}T00-00-00.0"
        for task, docs in pending.items():
            (model / f"samples_{task}_{stamp}.jsonl").write_text("".join(
                json.dumps({"doc_id": d, "acc": 0.0}) + "\n" for d in docs))
        assert_ok(mdad_cli("adaptive", "next", state, model, cwd=tmp_path))
        batch = pending
    assert set(pending) != set(batch), "every batch asked for the same task"


# ----------------------------------------------- the fingerprint is of what is read

def test_the_fingerprint_is_of_the_files_read_and_only_those(tmp_path, gpqa_data):
    """lm-eval: the fingerprint is `files_sha256` of the one sample file of the test's
    task, not of the other task's file beside it; a CSV's is of its bytes as parsed, the
    same value earlier mdad stored, so a state in progress still refuses last round's
    CSV."""
    from mdad.data.files import files_sha256

    state = _start(tmp_path)
    answers = tmp_path / "round1.csv"
    _batch_answers(state, gpqa_data, answers)
    assert_ok(mdad_cli("adaptive", "next", state, answers, cwd=tmp_path))
    assert _consistent(state)["applied"] == [files_sha256([answers], tmp_path)]
    assert_user_error(mdad_cli("adaptive", "next", state, answers, cwd=tmp_path),
                      r"round1\.csv: these results were applied already \(round 1\)")
    docs = json.loads(state.with_suffix(".samples.json").read_text())[TASK]
    results = tmp_path / "results"
    results.mkdir()
    mine = results / f"samples_{TASK}_2024-06-01T00-00-00.000000.jsonl"
    mine.write_text("".join(json.dumps({"doc_id": d, "acc_norm": 1.0}) + "\n" for d in docs))
    other = results / "samples_leaderboard_other_2024-06-01T00-00-00.000000.jsonl"
    other.write_text("not even json\n")  # never read: not a task of the test
    assert_ok(mdad_cli("adaptive", "next", state, results, cwd=tmp_path))
    applied = json.loads(state.read_text())["applied"]
    assert applied == [files_sha256([answers], tmp_path), files_sha256([mine], results)]


# `AdaptiveTest.load` with every open of the state recorded
_LOAD_AUDITED = """
import sys
from mdad.practice.adaptive import AdaptiveTest
opened = []
sys.addaudithook(lambda event, args: opened.append(args) if event == "open" else None)
AdaptiveTest.load(sys.argv[1])
print(sum(1 for args in opened if str(args[0]) == sys.argv[1]))
"""


def test_a_state_is_opened_once_never_through_a_link_and_read_bounded(tmp_path):
    """load opens the state once (O_NOFOLLOW, O_NONBLOCK), checks that descriptor and
    reads at most the cap and a byte from it: a link to /dev/zero, a pipe, a file over
    the cap are refused at once, with one line."""
    from mdad.practice.adaptive import STATE_MAX_BYTES

    state = _start(tmp_path)
    proc = subprocess.run([sys.executable, "-c", _LOAD_AUDITED, str(state)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "1", proc.stderr
    zero, fifo, big = tmp_path / "zero.json", tmp_path / "fifo.json", tmp_path / "big.json"
    zero.symlink_to("/dev/zero")
    os.mkfifo(fifo)
    with open(big, "wb") as handle:
        handle.truncate(STATE_MAX_BYTES + 1)
    began = time.monotonic()
    for path, message in ((zero, "a symbolic link; a state is read from the file itself, "
                                 "never through a link; pass the file it points to"),
                          (fifo, "not a regular file or folder"),
                          (big, "over 64 MB, not an adaptive test state; start a new test")):
        with pytest.raises(DataError, match=rf"^{path}: {message}"):
            AdaptiveTest.load(path)
    assert time.monotonic() - began < 10


def test_a_synthetic_dataset_s_test_saves_and_loads(gpqa_data):
    # a synthetic matrix has no file to hash: its identity stands in the sha256 field
    from mdad.data import load_dataset

    data = load_dataset("synthetic:gpqa")
    assert data.matrix.sha256 == "synthetic:gpqa:420:0:irt5"
    test = start_adaptive_test(data, budget=5, method="adaptive-md")
    assert checked(test.to_json()).sha256 == data.matrix.sha256
    damaged = {**test.to_json(), "sha256": "synthetic:gpqa:420:0:irt5\n"}
    with pytest.raises(DataError, match="sha256"):
        checked(damaged)


def test_data_answers_writes_a_models_answers_to_the_pending_batch(tmp_path, gpqa_data):
    """Issue 38, defect 5: the CSV loop with one of the dataset's models needed a
    script, `data answers --items STATE.samples.json` being refused. Now it takes the
    batch file, the state, or (for a dataset without lm-eval names) STATE.items.txt."""
    matrix = gpqa_data.matrix
    model = str(matrix.model_names[2])
    truth = {str(item): int(matrix.correctness[2, k]) for k, item in enumerate(matrix.item_ids)}
    state = _start(tmp_path)
    saved = tmp_path / "saved.samples.json"  # the test removes its batch file when done
    saved.write_bytes(state.with_suffix(".samples.json").read_bytes())
    for round_, items in ((1, state.with_suffix(".samples.json")), (2, state)):
        batch = tmp_path / f"round{round_}.csv"
        pending = json.loads(state.read_text())["pending"]
        assert_ok(mdad_cli("data", "answers", "gpqa", "--model", model, "--items", items,
                           "--out", batch, cwd=tmp_path))
        assert batch.read_text() == "item_id,correct\n" + "".join(
            f"{item},{truth[item]}\n" for item in pending)
        assert_ok(mdad_cli("adaptive", "next", state, batch, cwd=tmp_path))
    data = json.loads(state.read_text())
    assert len(data["answers"]) == 6 and all(truth[i] == v for i, v in data["answers"])

    (tmp_path / "csv").mkdir()
    csv_state = _start(tmp_path / "csv", dataset=shared_data(GPQA_CSV))  # no lm-eval names
    listed = csv_state.with_suffix(".items.txt")
    batch = tmp_path / "csv" / "batch.csv"
    assert_ok(mdad_cli("data", "answers", shared_data(GPQA_CSV), "--model", model,
                       "--items", listed, "--out", batch, cwd=tmp_path))
    assert batch.read_text().count("\n") == 4  # the header and the batch's 3 items
    # lm-eval names given for a dataset that has none (a CSV by path): named, not a crash
    assert_user_error(mdad_cli("data", "answers", shared_data(GPQA_CSV), "--model", model,
                               "--items", saved, "--out", tmp_path / "y.csv", cwd=tmp_path),
                      r"saved\.samples\.json: \d+ of the batch's \d+ items are not this "
                      r"dataset's \(e\.g\. 'leaderboard_gpqa_main/\d+'\)")
    from mdad.practice.answers import batch_items

    fifo = tmp_path / "batch.samples.json"
    os.mkfifo(fifo)  # no writer: a blocking open would wait forever
    with pytest.raises(DataError, match="not a regular file"):
        batch_items(fifo, ["0"], None)
    stray = tmp_path / "stray.txt"
    stray.write_text("no-such-item\n")
    assert_user_error(mdad_cli("data", "answers", "gpqa", "--model", model, "--items", stray,
                               "--out", tmp_path / "x.csv", cwd=tmp_path),
                      r"stray\.txt: 1 of the batch's 1 items are not this dataset's "
                      r"\(e\.g\. 'no-such-item'\)")
