"""`mdad data pull leaderboard BENCH`: the real huggingface_hub client against a local
stand-in of the hub (tests/hub_standin.py), which serves fixture repos in the exact
details layout (several tasks, two timestamps of one task, a gated repo, a repo without
the benchmark) and injects a 429 with Retry-After, a 500 and truncated bodies. The
pulled matrix must equal what the local lm-eval loader reads from the same files."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from helpers import assert_user_error
from hub_standin import (
    AUTHOR,
    NEW,
    OLD,
    TASKS,
    HubStandIn,
    fixture_repos,
    pull_cli,
    write_local_copy,
)

from mdad.data.compact import load_compact
from mdad.data.lm_eval import load_lm_eval_samples


@pytest.fixture(scope="module")
def pulled(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("pull")
    repos = fixture_repos()
    with HubStandIn(repos) as hub:
        proc = pull_cli(tmp_path, hub.endpoint, "data", "pull", "leaderboard", "bbh",
                    "--jobs", "3")
        first_requests = list(hub.requests)
        again = pull_cli(tmp_path, hub.endpoint, "data", "pull", "leaderboard", "bbh")
        second_requests = hub.requests[len(first_requests):]
        info = pull_cli(tmp_path, hub.endpoint, "data", "info", "leaderboard:bbh")
        run = pull_cli(tmp_path, hub.endpoint, "run", "leaderboard:bbh", "--methods", "random",
                   "--runs", "2", "--targets", "3", "--sources", "4", "--sizes", "2,4",
                   "--resamples", "10", "--out", str(tmp_path / "study"))
    return tmp_path, repos, proc, again, first_requests, second_requests, info, run


@pytest.mark.slow  # five pulls and a study through the CLI
def test_pull_writes_the_matrix_the_local_loader_reads(pulled):
    tmp_path, repos, proc, *_ = pulled
    assert proc.returncode == 0, proc.stderr
    folder = tmp_path / "cache" / "mdad" / "leaderboard" / "bbh"
    matrix = load_compact(folder)
    usable = [r for r in repos if r.endswith("-details")
              and not repos[r].gated and "org9__" not in r]
    local = load_lm_eval_samples(write_local_copy(repos, tmp_path / "local", usable),
                                 metric="acc_norm",
                                 tasks=set(TASKS))
    assert matrix.model_names.tolist() == local.model_names.tolist() == sorted(
        f"org{k}__model-{k}" for k in range(8))
    assert matrix.item_ids.tolist() == local.item_ids.tolist()
    assert matrix.subtask_names == local.subtask_names
    np.testing.assert_array_equal(matrix.correctness, local.correctness)
    np.testing.assert_allclose(matrix.confidence, local.confidence, rtol=1e-6)
    assert np.asarray(np.load(folder / "correctness.npy")).dtype == np.uint8
    assert np.asarray(np.load(folder / "confidence.npy")).dtype == np.float32
    assert matrix.item_ids[0].startswith("leaderboard_bbh_navigate/")
    # the newer evaluation of org0's navigate won for docs 0-2
    newer = load_lm_eval_samples(tmp_path / "local" / "org0__model-0" /
                                 f"samples_leaderboard_bbh_navigate_{NEW}.jsonl",
                                 metric="acc_norm")
    row = matrix.model_names.tolist().index("org0__model-0")
    np.testing.assert_array_equal(matrix.correctness[row, :3], newer.correctness[0])


@pytest.mark.slow  # five pulls and a study through the CLI
def test_faults_were_met_and_survived(pulled):
    _, _, proc, _, requests, *_ = pulled
    statuses = [status for _, path, status in requests if "org1__model-1" in path
                and "/resolve/" in path]
    assert 429 in statuses and 500 in statuses
    snarks = [status for method, path, status in requests if method == "GET"
              and "org1__model-1/samples_leaderboard_bbh_snarks" in path]
    assert len(snarks) >= 2  # the truncated body was fetched again
    text = " ".join(proc.stdout.split())
    assert "8 models (8 fetched, 0 from an earlier pull)" in text


@pytest.mark.slow  # five pulls and a study through the CLI
def test_gated_and_empty_repos_are_skipped_and_said(pulled):
    _, _, proc, *_ = pulled
    text = " ".join(proc.stdout.split())
    assert ("skipped 1 models: gated or not authorised: accept the dataset's terms at "
            f"https://huggingface.co/datasets/{AUTHOR}/org8__model-8-details with your "
            "account, or set HF_TOKEN") in text
    assert "skipped 1 models: no bbh details" in text
    assert "contents" not in text


@pytest.mark.slow  # five pulls and a study through the CLI
def test_a_second_pull_fetches_no_finished_model(pulled):
    _, _, _, again, _, second, *_ = pulled
    assert again.returncode == 0, again.stderr
    fetched = [path for method, path, _ in second if "/resolve/" in path
               and "org8__" not in path and "org9__" not in path]
    assert fetched == []
    assert "8 models (0 fetched, 8 from an earlier pull)" in " ".join(again.stdout.split())


@pytest.mark.slow  # five pulls and a study through the CLI
def test_the_pulled_dataset_is_usable_by_name_with_its_provenance(pulled):
    tmp_path, repos, _, _, _, _, info, run = pulled
    assert info.returncode == 0, info.stderr
    text = " ".join(info.stdout.split())
    assert "pulled: bbh (acc_norm)" in text and "8 models, 17 sample files" in text
    meta = json.loads((tmp_path / "cache" / "mdad" / "leaderboard" / "bbh" /
                       "mdad-compact.json").read_text())
    alpha = meta["provenance"]["org0__model-0"]
    assert alpha["repo"] == f"{AUTHOR}/org0__model-0-details"
    assert alpha["revision"] == repos[alpha["repo"]].sha
    assert len(alpha["files"]) == 3 and meta["mdad_version"]
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "study" / "mdad.csv").is_file()


def test_a_stream_cut_every_time_is_reported_not_half_counted(tmp_path):
    repos = fixture_repos()
    cut = f"org2__model-2/samples_leaderboard_bbh_snarks_{OLD}.jsonl"
    repos[f"{AUTHOR}/org2__model-2-details"].faults = {cut: ["truncate"] * 20}
    with HubStandIn(repos) as hub:
        proc = pull_cli(tmp_path, hub.endpoint, "data", "pull", "leaderboard", "bbh",
                    "--models", "4", "--out", str(tmp_path / "bbh"))
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "failed: org2__model-2:" in text and "could not be read in 3 attempts" in text
    assert "org2__model-2" not in load_compact(tmp_path / "bbh").model_names.tolist()


def test_every_model_gated_is_one_line(tmp_path):
    repos = {r: repo for r, repo in fixture_repos().items() if "org8__" in r}
    with HubStandIn(repos) as hub:
        proc = pull_cli(tmp_path, hub.endpoint, "data", "pull", "leaderboard", "bbh",
                    "--out", str(tmp_path / "bbh"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "no model has bbh details to pull (1 gated or not authorised" in proc.stderr
    assert "set HF_TOKEN" in proc.stderr


@pytest.mark.parametrize("kind", ["file", "folder of other files"])
def test_an_out_that_writing_would_destroy_is_refused_before_any_download(kind, tmp_path):
    out = tmp_path / "mine"
    if kind == "file":
        out.write_text("notes\n")
    else:
        out.mkdir()
        (out / "notes.txt").write_text("notes\n")
    with HubStandIn(fixture_repos()) as hub:
        proc = pull_cli(tmp_path, hub.endpoint, "data", "pull", "leaderboard", "bbh",
                    "--models", "2", "--out", str(out))
        assert hub.requests == []
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--out" in proc.stderr and ("is a file" in proc.stderr
                                       or "not an mdad dataset" in proc.stderr)
    assert (out.read_text() if kind == "file" else (out / "notes.txt").read_text()) == "notes\n"


@pytest.mark.slow  # the hub client retries a refused connection for about 25 s
def test_a_hub_that_cannot_be_reached_is_one_line(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = pull_cli(tmp_path, f"http://127.0.0.1:{port}", "data", "pull", "leaderboard", "bbh",
                "--models", "2", "--out", str(tmp_path / "bbh"))
    # the hub client's retries go to the progress line (none off a terminal), not stderr
    assert_user_error(proc, r"^mdad: error: could not list the leaderboard's details on "
                      rf"http://127\.0\.0\.1:{port} \(ConnectError: .*\); check the "
                      "network connection")


def test_the_hub_client_s_log_lines_go_to_the_progress_line_and_its_handlers_come_back(
        monkeypatch):
    import logging

    from huggingface_hub.utils.logging import get_logger

    from mdad.cli.data_cmd import hub_log_shown_by

    printed: list[str] = []

    class Printed(logging.Handler):  # stands for the client's own stderr handler
        def emit(self, record: logging.LogRecord) -> None:
            printed.append(record.getMessage())

    root = logging.getLogger("huggingface_hub")
    monkeypatch.setattr(root, "handlers", [*root.handlers, Printed()])
    before = root.handlers[:]
    http = get_logger("huggingface_hub.utils._http")
    shown: list[str] = []
    with hub_log_shown_by(shown.append):
        http.warning("Retrying in 2s\n[Retry 2/5].")
        http.info("not a warning")
    assert shown == ["Retrying in 2s [Retry 2/5]."] and printed == []
    assert root.handlers == before
    http.warning("after the pull")
    assert printed == ["after the pull"]
    # HF_HUB_VERBOSITY=info (a level below warnings) asks for the client's own lines
    level = root.level
    root.setLevel(logging.INFO)  # setLevel: the loggers cache their levels
    try:
        with hub_log_shown_by(shown.append):
            http.info("asked for")
    finally:
        root.setLevel(level)
    assert printed == ["after the pull", "asked for"] and len(shown) == 1


def test_lines_are_read_in_bounded_chunks(monkeypatch):
    """The stream is read a chunk at a time and split into lines across chunks: no
    read is larger than the chunk, whatever the file's size."""
    import mdad.data.leaderboard as leaderboard

    monkeypatch.setattr(leaderboard, "_CHUNK", 7)
    data = b"".join(f'{{"doc_id": {i}, "x": "{"y" * i}"}}\n'.encode() for i in range(20))
    sizes: list[int] = []

    class Stream(io.BytesIO):
        def read(self, n: int = -1) -> bytes:
            assert 0 < n <= 7
            chunk = super().read(n)
            sizes.append(len(chunk))
            return chunk

    counted = []
    lines = list(leaderboard._lines(Stream(data), counted.append))
    assert b"".join(lines) == data and len(lines) == 20
    assert max(sizes) <= 7 and sum(counted) == len(data)


def test_a_benchmark_not_pulled_yet_says_how_to_pull_it(tmp_path, monkeypatch):
    from mdad.data import load_dataset
    from mdad.errors import DataError

    monkeypatch.setenv("MDAD_DATA", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(DataError, match=r"dataset 'leaderboard:musr': not pulled yet .*run "
                                        r"`mdad data pull leaderboard musr` first"):
        load_dataset("leaderboard:musr")
