"""The practitioner loop with the real lm-evaluation-harness CLI, end to end.

Nothing is mocked: the test writes a small local multiple-choice benchmark (three task
YAMLs with ``dataset_path: json`` and local data files, grouped as ``mdadloop``), runs
the real ``lm-eval run`` command line (lm-eval 0.4.13 or newer, no torch) on 20
simulated models (``tests/lm_eval_fixture/mdad_simmodel.py``, registered with
lm-eval's model registry) with ``--log_samples``, and then runs the real ``mdad``
command line as a user does: ``mdad run`` on that output, ``mdad select --format
lm-eval``, ``lm-eval run --samples`` on a new model, a re-run of part of the items into
the same output folder, ``mdad data info`` and ``mdad estimate``. Everything runs
offline (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``, a fresh ``HF_HOME``).

Each ``lm-eval`` process would spend about 10 s indexing the harness's own task YAMLs
(some 14,000, even with ``--include_path``): the simulated model's entry point indexes
only the benchmark's tasks (`mdad_simmodel.main`; `test_lm_eval_settings` runs once
with the whole index). The 20 models run in parallel, one process per model: the
module takes under a minute on 2 cores.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from mdad.data.lm_eval import lm_eval_files, load_lm_eval_samples

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parent / "lm_eval_fixture"
GROUP = "mdadloop"
TASKS = {f"{GROUP}_alpha": 48, f"{GROUP}_beta": 60, f"{GROUP}_gamma": 72}
N_OPTIONS = 4
MODELS = {f"sim-{k:02d}": (round(float(a), 3), 100 + k)
          for k, a in enumerate(np.linspace(0.3, 0.85, 20))}
NEWCOMER, NEWCOMER_ABILITY, NEWCOMER_SEED, RERUN_SEED = "newcomer", 0.7, 7, 8
SIZE = 24
SIZES, RUNS, TARGETS, SOURCES = "10,20", "5", "8", "12"


def require_lm_eval() -> None:
    """lm-eval is in the test extra: skip without it locally, fail in CI."""
    if importlib.util.find_spec("lm_eval") is None:
        message = "lm-eval is not installed; pip install -e '.[test]'"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


# --- the benchmark and the two command lines ---------------------------------------------


def write_benchmark(root: Path) -> Path:
    """Task YAMLs and their local JSON-lines data (deterministic), and a group YAML."""
    root.mkdir(parents=True)
    for k, (task, n_docs) in enumerate(TASKS.items()):
        rng = np.random.default_rng(k)
        data = root / f"{task}.jsonl"
        with data.open("w", encoding="utf-8") as handle:
            for i in range(n_docs):
                doc = {"id": i, "question": f"{task} question {i}?",
                       "choices": [f"answer {i}{c}" for c in "abcd"[:N_OPTIONS]],
                       "answer": int(rng.integers(N_OPTIONS)),
                       "difficulty": round(float(rng.normal(0.0, 1.2)), 4)}
                handle.write(json.dumps(doc) + "\n")
        (root / f"{task}.yaml").write_text(
            f"task: {task}\n"
            "dataset_path: json\n"
            f"dataset_kwargs:\n  data_files:\n    test: {data}\n"
            "test_split: test\n"
            "output_type: multiple_choice\n"
            'doc_to_text: "{{question}}\\nAnswer:"\n'
            'doc_to_choice: "{{choices}}"\n'
            "doc_to_target: answer\n"
            "metric_list:\n"
            "  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
            "  - metric: acc_norm\n    aggregation: mean\n    higher_is_better: true\n",
            encoding="utf-8")
    (root / f"{GROUP}.yaml").write_text(
        f"group: {GROUP}\ntask:\n" + "".join(f"  - {t}\n" for t in TASKS)
        + "aggregate_metric_list:\n  - metric: acc\n    weight_by_size: true\n",
        encoding="utf-8")
    return root


def lm_eval(work: Path, model: str, ability: float, seed: int, tasks: list[str],
            output: Path, *extra: str, builtin_tasks: bool = False
            ) -> subprocess.CompletedProcess:
    """The real ``lm-eval run`` CLI with the simulated model registered, offline; its
    task index holds only the benchmark's tasks unless `builtin_tasks` (10 s more)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "MDAD_SIM_BUILTIN_TASKS": "1" if builtin_tasks else "0",
           "HF_HOME": str(work / "hf" / model), "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(FIXTURE),
                                                       os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "mdad_simmodel", "run", "--model", "mdad-sim",
               "--model_args", f"pretrained={model},ability={ability},seed={seed}",
               "--tasks", ",".join(tasks), "--include_path", str(work / "tasks"),
               "--log_samples", "--output_path", str(output), *extra]
    proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, f"lm-eval failed for {model}:\n{proc.stderr[-3000:]}"
    # mdad_simmodel.BUILTIN_TASKS_LEFT_OUT (not imported here: two threads would each
    # import it, and lm-eval refuses a second class of the model's name)
    assert builtin_tasks != ("built-in tasks left out of the task index" in proc.stderr)
    return proc


def mdad(work: Path, *args: str) -> subprocess.CompletedProcess:
    """The real ``mdad`` CLI; exit 0 required."""
    proc = subprocess.run([sys.executable, "-m", "mdad", *args], cwd=work,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"mdad {' '.join(args)} failed:\n{proc.stderr[-3000:]}"
    return proc


@cache
def simulated_model():
    """The fixture's model module, imported once from its file (importing registers
    the model with lm-eval, which refuses a second, different class of that name)."""
    spec = importlib.util.spec_from_file_location("mdad_simmodel", FIXTURE / "mdad_simmodel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def samples_of(folder: Path, task: str) -> list[Path]:
    """A model folder's sample files of `task`, oldest first."""
    return sorted(folder.glob(f"samples_{task}_*.jsonl"))


@dataclass(frozen=True)
class Loop:
    work: Path
    out: Path  # --output_path of the 20 models
    run: Path  # the `mdad run` folder
    microbenchmark: Path
    samples: dict[str, list[int]]  # mb.samples.json
    rerun: dict[str, list[int]]  # the re-run's subset
    select_stdout: str
    newcomer: Path  # the new model's folder (two runs)
    info_stdout: str
    estimate: dict


@pytest.fixture(scope="module")
def loop(tmp_path_factory) -> Loop:
    require_lm_eval()
    work = tmp_path_factory.mktemp("lm_eval_loop")
    write_benchmark(work / "tasks")
    out = work / "out"

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        jobs = [pool.submit(lm_eval, work, name, ability, seed, [GROUP], out)
                for name, (ability, seed) in MODELS.items()]
        for job in jobs:
            job.result()

    run = work / "study"
    mdad(work, "run", str(out), "--metric", "acc", "--runs", RUNS, "--sizes", SIZES,
         "--targets", TARGETS, "--sources", SOURCES, "--resamples", "100", "--out", str(run))

    microbenchmark = work / "mb.json"
    selected = mdad(work, "select", str(out), "--method", "random", "--size", str(SIZE),
                    "--seed", "1", "--format", "lm-eval", "--out", str(microbenchmark))
    samples_path = work / "mb.samples.json"
    samples = json.loads(samples_path.read_text(encoding="utf-8"))

    # The new model on the micro-benchmark, then a re-run of every other selected item
    # of each task (after a change: another seed) into the same output folder.
    new_out = work / "new"
    lm_eval(work, NEWCOMER, NEWCOMER_ABILITY, NEWCOMER_SEED, list(samples), new_out,
            "--samples", str(samples_path))
    rerun = {task: docs[::2] for task, docs in samples.items()}
    rerun_path = work / "rerun.samples.json"
    rerun_path.write_text(json.dumps(rerun), encoding="utf-8")
    lm_eval(work, NEWCOMER, NEWCOMER_ABILITY, RERUN_SEED, list(rerun), new_out,
            "--samples", str(rerun_path))

    newcomer = new_out / NEWCOMER
    info = mdad(work, "data", "info", str(newcomer))
    estimate = mdad(work, "estimate", str(microbenchmark), str(newcomer), "--json")
    return Loop(work, out, run, microbenchmark, samples, rerun, selected.stdout, newcomer,
                info.stdout, json.loads(estimate.stdout))


# --- lm-eval's output, as mdad reads it ---------------------------------------------------


def test_lm_eval_logged_every_model_and_document(loop):
    assert sorted(p.name for p in loop.out.iterdir()) == sorted(MODELS)
    option_loglikelihoods = simulated_model().option_loglikelihoods
    for name, (ability, seed) in MODELS.items():
        for task, n_docs in TASKS.items():
            (path,) = samples_of(loop.out / name, task)
            records = read_jsonl(path)
            assert [r["doc_id"] for r in records] == list(range(n_docs))
            for record in records:
                assert record["doc"]["id"] == record["doc_id"]
                values = option_loglikelihoods(ability, seed, task, record["doc"])
                assert record["acc"] == float(np.argmax(values) == record["doc"]["answer"])


def test_mdad_reads_the_cells_lm_eval_wrote(loop):
    matrix = load_lm_eval_samples(loop.out)
    assert matrix.model_names.tolist() == sorted(MODELS)
    assert matrix.n_items == sum(TASKS.values()) and matrix.n_missing == 0
    assert matrix.subtask_names == tuple(TASKS)
    column = {item: k for k, item in enumerate(matrix.item_ids.tolist())}
    for m, name in enumerate(matrix.model_names.tolist()):
        for task in TASKS:
            for record in read_jsonl(samples_of(loop.out / name, task)[0]):
                cell = column[f"{task}/{record['doc_id']}"]
                assert matrix.correctness[m, cell] == record["acc"]
                lls = np.array([float(v) for v, _ in record["filtered_resps"]])
                gold = np.exp(lls - lls.max())[record["doc"]["answer"]] / np.exp(
                    lls - lls.max()).sum()
                assert matrix.confidence[m, cell] == pytest.approx(gold, rel=1e-5)
    accuracy = matrix.accuracy()
    abilities = np.array([MODELS[n][0] for n in matrix.model_names.tolist()])
    assert np.corrcoef(abilities, accuracy)[0, 1] > 0.8  # the models differ as intended


def test_mdad_run_completes(loop):
    import pandas as pd

    table = pd.read_csv(loop.run / "mdad.csv")
    assert {"method", "size", "split", "mdad"} <= set(table.columns)
    assert sorted(table["size"].unique().tolist()) == [10, 20]
    assert "random" in set(table["method"])
    config = json.loads((loop.run / "config.json").read_text(encoding="utf-8"))
    assert config  # written last, so the study finished


# --- select, the --samples run, the re-run and estimate ----------------------------------


def test_select_writes_the_samples_file(loop):
    samples = loop.samples
    assert set(samples) <= set(TASKS)
    assert all(docs == sorted(set(docs)) and docs for docs in samples.values())
    assert all(0 <= d < TASKS[task] for task, docs in samples.items() for d in docs)
    assert sum(map(len, samples.values())) == SIZE
    bundle = json.loads(loop.microbenchmark.read_text(encoding="utf-8"))
    lm_eval_items = bundle.get("lm_eval_items") or bundle["items"]
    assert sorted(lm_eval_items) == sorted(f"{t}/{d}" for t, docs in samples.items()
                                           for d in docs)
    # Newer versions of `select` also name the tasks to pass to lm-eval (issue 11, part
    # 7): exactly the tasks with selected items, never the group.
    if "lm_eval_tasks" in bundle:
        assert sorted(bundle["lm_eval_tasks"]) == sorted(samples)
    text = " ".join(loop.select_stdout.split())
    if "--tasks" in text:
        assert all(task in text for task in samples)
        assert re.search(rf"\b{GROUP}\b(?!_)", text) is None
    # lm-eval refuses --log_samples without --output_path: the printed command has both.
    assert "--log_samples --output_path" in text


def test_lm_eval_samples_run_keeps_the_doc_ids(loop):
    """lm-eval logs the original doc index as doc_id with --samples (not the position
    in the subset), provided the indices are sorted ascending, as `select` writes them."""
    for task, docs in loop.samples.items():
        first, second = samples_of(loop.newcomer, task)
        for path, wanted in ((first, docs), (second, loop.rerun[task])):
            records = read_jsonl(path)
            assert [r["doc_id"] for r in records] == wanted
            assert all(r["doc"]["id"] == r["doc_id"] for r in records)
    # A task left out of --samples would run in full: none was left out.
    assert {p.name.split("_20")[0].removeprefix("samples_")
            for p in loop.newcomer.glob("samples_*.jsonl")} == set(loop.samples)


def merged_answers(loop: Loop) -> dict[str, float]:
    """The new model's answer on each selected item, from the jsonl: the re-run's where
    it has the item (it is newer), else the first run's."""
    answers: dict[str, float] = {}
    for task in loop.samples:
        for path in samples_of(loop.newcomer, task):  # oldest first
            answers.update({f"{task}/{r['doc_id']}": float(r["acc"])
                            for r in read_jsonl(path)})
    return answers


def test_the_rerun_is_merged_newest_winning(loop):
    files = lm_eval_files(loop.newcomer).models[NEWCOMER]
    assert len(files) == 2 * len(loop.samples)
    for task in loop.samples:
        first, second = samples_of(loop.newcomer, task)
        assert first.name < second.name  # the timestamps differ
        assert [f for f in files if f.name.startswith(f"samples_{task}_")] == [first, second]
        assert f"    {first.name}" in loop.info_stdout and f"    {second.name}" in loop.info_stdout
    answers = merged_answers(loop)
    old = {f"{t}/{r['doc_id']}": float(r["acc"]) for t in loop.samples
           for r in read_jsonl(samples_of(loop.newcomer, t)[0])}
    changed = [item for item in old if old[item] != answers[item]]
    assert changed, "the re-run should change some answers, or newest-wins is untested"
    matrix = load_lm_eval_samples(loop.newcomer)
    assert dict(zip(matrix.item_ids.tolist(), matrix.correctness[0].tolist(),
                    strict=True)) == answers


def test_estimate_is_the_mean_of_the_real_answers(loop):
    answers = merged_answers(loop)
    selected = [f"{t}/{d}" for t, docs in loop.samples.items() for d in docs]
    assert sorted(answers) == sorted(selected)
    estimate = loop.estimate
    assert estimate["model"] == NEWCOMER
    assert estimate["missing"] == []
    assert estimate["items_used"] == SIZE
    assert estimate["accuracy"] == pytest.approx(np.mean([answers[i] for i in selected]),
                                                 abs=1e-12)
    assert estimate["low"] <= estimate["accuracy"] <= estimate["high"]


# --- the adaptive loop: mdad adaptive start / next with lm-eval in between ----------------

ADAPTIVE_BUDGET, ADAPTIVE_BATCH = 12, 4


@pytest.fixture(scope="module")
def adaptive_loop(loop):
    """A new model tested adaptively on the 20 models' benchmark: `mdad adaptive start`,
    then per batch the real `lm-eval run --samples` into one output folder and `mdad
    adaptive next` on it, until the budget is spent."""
    work = loop.work
    state = work / "adaptive.json"
    mdad(work, "adaptive", "start", str(loop.out), "--metric", "acc", "--budget",
         str(ADAPTIVE_BUDGET), "--batch", str(ADAPTIVE_BATCH), "--out", str(state))
    output = work / "adaptive-out"
    batches, refused = [], None
    for _ in range(ADAPTIVE_BUDGET // ADAPTIVE_BATCH):
        batch = json.loads((work / "adaptive.samples.json").read_text(encoding="utf-8"))
        batches.append(batch)
        lm_eval(work, "adaptee", 0.6, 11, list(batch), output,
                "--samples", str(work / "adaptive.samples.json"))
        step = subprocess.run([sys.executable, "-m", "mdad", "adaptive", "next", str(state),
                               str(output / "adaptee"), "--json"], cwd=work,
                              capture_output=True, text=True, timeout=600, check=False)
        assert step.returncode == 0, step.stderr
        if refused is None:  # the same results a second time: never applied twice
            refused = subprocess.run([sys.executable, "-m", "mdad", "adaptive", "next",
                                      str(state), str(output / "adaptee")], cwd=work,
                                     capture_output=True, text=True, timeout=600,
                                     check=False)
    final = json.loads(step.stdout)
    assert not (work / "adaptive.samples.json").exists()  # no batch left to run
    return state, output / "adaptee", batches, final, refused


def test_adaptive_loop_records_the_answers_lm_eval_logged(adaptive_loop):
    from mdad.practice.adaptive import AdaptiveTest

    state, folder, batches, final, refused = adaptive_loop
    assert final["finished"] and final["answered"] == ADAPTIVE_BUDGET
    assert refused.returncode == 2 and "applied already" in refused.stderr
    assert "Traceback" not in refused.stderr
    test = AdaptiveTest.load(state)
    asked = [f"{task}/{doc}" for batch in batches for task, docs in batch.items()
             for doc in docs]
    assert len(asked) == len(set(asked)) == ADAPTIVE_BUDGET  # no item asked twice
    logged = {}
    for path in sorted(folder.glob("samples_*.jsonl")):
        task = path.name.removeprefix("samples_").split("_20")[0]
        logged.update({f"{task}/{r['doc_id']}": float(r["acc"]) for r in read_jsonl(path)})
    assert set(logged) == set(asked)  # lm-eval ran exactly the batches
    names = dict(zip(test.item_ids, test.lm_eval_items, strict=True))
    assert {names[item]: value for item, value in test.answers.items()} == logged
    estimate = test.estimate()
    assert estimate.accuracy == pytest.approx(final["accuracy"], abs=1e-12)
    assert estimate.low <= estimate.accuracy <= estimate.high
