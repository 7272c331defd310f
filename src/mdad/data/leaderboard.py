"""Pull one Open LLM Leaderboard v2 benchmark from the Hugging Face Hub into a compact
dataset (`mdad.data.compact`).

The leaderboard's per-item results are the dataset repos
``open-llm-leaderboard/<org>__<model>-details``: one
``samples_leaderboard_<task>_<timestamp>.jsonl`` per task and evaluation, in
lm-evaluation-harness's ``--log_samples`` schema. Every call goes through
`huggingface_hub` (the repo listing, each repo's revision and files, and its file
system, which opens files as streams): no hand-written HTTP. Each file is streamed
line by line and reduced as it arrives to each record's doc_id, metric and option
log-likelihoods, so memory stays bounded whatever the file's size; a file whose bytes
fall short of the size the hub lists, or whose last record is cut, is retried and then
reported, never half-counted. Each finished model is saved as a small partial file
(in ``.<out>.partial/`` beside the output folder), so an interrupted pull resumes
without fetching it again; the compact dataset is assembled from the partial files at
the end.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from mdad.data.compact import check_replaceable, write_compact
from mdad.data.lm_eval import _merge, _name_parts, _TaskScores, build_matrix, read_task_lines
from mdad.errors import ConfigError, DataError, MdadError

AUTHOR = "open-llm-leaderboard"
SUFFIX = "-details"
RETRIES = 3  # attempts per file (HTTP 429/5xx are retried inside huggingface_hub too)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Benchmark:
    """A leaderboard benchmark: its tasks (exact names, or a name prefix) and metric."""

    name: str
    tasks: tuple[str, ...]
    metric: str
    prefix: bool = False

    def holds(self, task: str) -> bool:
        if self.prefix:
            return any(task.startswith(p) for p in self.tasks)
        return task in self.tasks


BENCHMARKS = {b.name: b for b in (
    Benchmark("gpqa", ("leaderboard_gpqa_main",), "acc_norm"),
    Benchmark("gpqa-diamond", ("leaderboard_gpqa_diamond",), "acc_norm"),
    Benchmark("bbh", ("leaderboard_bbh_",), "acc_norm", prefix=True),
    Benchmark("mmlu-pro", ("leaderboard_mmlu_pro",), "acc"),
    Benchmark("musr", ("leaderboard_musr_",), "acc_norm", prefix=True),
)}


@dataclass(frozen=True)
class PullProgress:
    """Where a pull stands: models done (fetched, resumed, skipped or failed) of all,
    bytes streamed so far, and seconds since the start."""

    models_done: int
    models_total: int
    bytes_streamed: int
    elapsed_seconds: float

    @property
    def bytes_per_second(self) -> float:
        return self.bytes_streamed / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    @property
    def remaining_seconds(self) -> float | None:
        if not self.models_done or self.models_done >= self.models_total:
            return None
        return self.elapsed_seconds / self.models_done * (self.models_total - self.models_done)


@dataclass
class PullOutcome:
    """What a pull did.

    Attributes
    ----------
    folder : the compact dataset written (None when no model had results).
    pulled, resumed : models fetched now, and models taken from an earlier pull's
        partial files.
    skipped : reason -> models: without details for the benchmark, or gated (with
        what to do).
    failed : model -> why its files could not be read after the retries.
    bytes_streamed : bytes read from the hub.
    """

    folder: Path | None
    pulled: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    bytes_streamed: int = 0


class _Skip(Exception):
    """This model has nothing to pull (no details for the benchmark, or gated)."""


def model_name(repo_id: str) -> str:
    """``open-llm-leaderboard/org__model-details`` -> ``org__model``."""
    return repo_id.split("/", 1)[-1].removesuffix(SUFFIX)


def repo_of(name: str) -> str:
    """A model list entry (``org/model``, ``org__model`` or the details repo) -> the
    details repo id."""
    name = name.strip()
    if name.startswith(f"{AUTHOR}/"):
        return name if name.endswith(SUFFIX) else name + SUFFIX
    return f"{AUTHOR}/{name.replace('/', '__')}{SUFFIX}"


def _lines(handle: Any, counter: Callable[[int], None]) -> Iterator[bytes]:
    """The lines of a stream read in 1 MiB chunks, counting the bytes as they come."""
    rest = b""
    while True:
        chunk = handle.read(_CHUNK)
        if not chunk:
            break
        counter(len(chunk))
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        yield from (part + b"\n" for part in parts)
    if rest:
        yield rest


class _Puller:
    """One pull's shared state: the hub clients, the byte counter and the folder."""

    def __init__(self, benchmark: Benchmark, out: Path, *, token: str | None,
                 endpoint: str | None) -> None:
        from huggingface_hub import HfApi, HfFileSystem

        self.benchmark, self.out = benchmark, out
        # beside the dataset folder, which is replaced whole when it is written
        self.partial = out.parent / f".{out.name}.partial"
        self.api = HfApi(endpoint=endpoint, token=token)
        self.fs = HfFileSystem(endpoint=endpoint, token=token, skip_instance_cache=True)
        self._lock = threading.Lock()
        self.bytes = 0

    def count(self, n: int) -> None:
        with self._lock:
            self.bytes += n

    def partial_path(self, repo: str) -> Path:
        return self.partial / f"{model_name(repo)}.npz"

    def files_of(self, repo: str) -> tuple[str, dict[str, int]]:
        """The repo's revision (commit sha) and its sample files of the benchmark, with
        their sizes."""
        info = _retried(lambda: self.api.dataset_info(repo, files_metadata=True))
        files = {}
        for sibling in info.siblings or []:
            name = Path(sibling.rfilename).name
            if not name.startswith("samples_") or not name.endswith(".jsonl"):
                continue
            if self.benchmark.holds(_name_parts(Path(name))[0]):
                files[sibling.rfilename] = int(sibling.size or 0)
        return str(info.sha), files

    def read_file(self, repo: str, revision: str, path: str, size: int) -> _TaskScores:
        """One sample file, streamed and reduced; retried when cut short."""
        last: Exception | None = None
        for _ in range(RETRIES):
            streamed = 0

            def counted(n: int) -> None:
                nonlocal streamed
                streamed += n
                self.count(n)

            try:
                with self.fs.open(f"datasets/{repo}/{path}", "rb", revision=revision,
                                  block_size=0) as handle:
                    scores = read_task_lines(_lines(handle, counted), f"{repo}/{path}",
                                             self.benchmark.metric)
                if size and streamed != size:
                    raise DataError(f"{repo}/{path}: {streamed} of {size} bytes arrived")
                return scores
            except Exception as exc:  # a cut stream, a parse error of a cut line, HTTP
                if _is_gated(exc):
                    raise
                last = exc
        raise DataError(f"{repo}/{path}: could not be read in {RETRIES} attempts "
                        f"({_reason(last)})")

    def pull_model(self, repo: str) -> None:
        """Fetch one model's files of the benchmark and save its partial file."""
        try:
            revision, files = self.files_of(repo)
        except Exception as exc:
            if _is_gated(exc):
                raise _Skip(_gated_reason(repo)) from None
            if type(exc).__name__ == "RepositoryNotFoundError":
                raise _Skip("no details repo") from None
            raise
        if not files:
            raise _Skip(f"no {self.benchmark.name} details")
        by_task: dict[str, list[str]] = {}
        for path in sorted(files, key=lambda p: (*_name_parts(Path(p)), p)):  # oldest first
            by_task.setdefault(_name_parts(Path(path))[0], []).append(path)
        try:
            tasks = {task: _merge([self.read_file(repo, revision, p, files[p]) for p in paths])
                     for task, paths in by_task.items()}
        except Exception as exc:
            if _is_gated(exc):
                raise _Skip(_gated_reason(repo)) from None
            raise
        provenance = {"repo": repo, "revision": revision, "files": sorted(files),
                      "pulled_at": datetime.now(UTC).isoformat(timespec="seconds")}
        _save_partial(self.partial_path(repo), tasks, provenance)


def _retried(call: Callable[[], Any]) -> Any:
    """`call`, retried with backoff on HTTP 429 and 5xx, honouring Retry-After (the
    hub client retries its file reads and listings itself, not its repo info)."""
    wait = 1.0
    for attempt in range(RETRIES + 2):
        try:
            return call()
        except Exception as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            if status != 429 and not (isinstance(status, int) and status >= 500):
                raise
            if attempt == RETRIES + 1:
                raise
            after = exc.response.headers.get("Retry-After")
            time.sleep(float(after) if after and after.isdigit() else wait)
            wait = min(wait * 2, 30.0)
    raise AssertionError("unreachable")


def _is_gated(exc: BaseException) -> bool:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return type(exc).__name__ == "GatedRepoError" or status in (401, 403)


def _gated_reason(repo: str) -> str:
    return (f"gated or not authorised: accept the dataset's terms at "
            f"https://huggingface.co/datasets/{repo} with your account, or set HF_TOKEN")


def _reason(exc: BaseException | None) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200] if exc else "unknown"


def _save_partial(path: Path, tasks: dict[str, _TaskScores], provenance: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {"provenance": np.array(json.dumps(provenance))}
    for k, (task, scores) in enumerate(sorted(tasks.items())):
        arrays[f"task{k}"] = np.array(task)
        arrays[f"docs{k}"] = np.array(scores.doc_ids)
        arrays[f"scores{k}"] = scores.scores.astype(np.float32)
        arrays[f"confidence{k}"] = scores.confidence.astype(np.float32)
    temporary = path.with_suffix(".tmp.npz")
    with temporary.open("wb") as handle:
        np.savez(handle, **arrays)
    temporary.replace(path)


def _load_partial(path: Path) -> tuple[dict[str, _TaskScores], dict] | None:
    """A saved model, or None when the file is damaged (the model is fetched again)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            provenance = json.loads(str(data["provenance"]))
            tasks, k = {}, 0
            while f"task{k}" in data:
                tasks[str(data[f"task{k}"])] = _TaskScores(
                    [str(d) for d in data[f"docs{k}"]], data[f"scores{k}"].astype(np.float64),
                    data[f"confidence{k}"].astype(np.float64))
                k += 1
        return tasks, provenance
    except Exception:
        path.unlink(missing_ok=True)
        return None


def list_repos(bench: str, *, models: int | str = "all", model_list: list[str] | None = None,
               token: str | None = None, endpoint: str | None = None) -> list[str]:
    """The details repos to pull: those of `model_list`, or the hub's listing of
    ``open-llm-leaderboard/*-details`` in its order (the first `models` of them)."""
    from huggingface_hub import HfApi

    if model_list is not None:
        return list(dict.fromkeys(repo_of(name) for name in model_list if name.strip()))
    api = HfApi(endpoint=endpoint, token=token)
    repos = (info.id for info in api.list_datasets(author=AUTHOR, search=SUFFIX)
             if info.id.endswith(SUFFIX))
    if models == "all":
        return list(repos)
    found = []
    for repo in repos:
        found.append(repo)
        if len(found) >= int(models):
            break
    return found


def pull_leaderboard(bench: str, out: Path, *, models: int | str = "all",
                     model_list: list[str] | None = None, jobs: int = 4,
                     token: str | None = None, endpoint: str | None = None,
                     progress: Callable[[PullProgress], None] | None = None) -> PullOutcome:
    """Pull benchmark `bench` of the Open LLM Leaderboard into the compact dataset `out`.

    Parameters
    ----------
    bench : one of `BENCHMARKS` (gpqa, gpqa-diamond, bbh, mmlu-pro, musr).
    out : the dataset folder (e.g. ``~/.cache/mdad/leaderboard/bbh``), replaced whole
        at the end; the partial files beside it let an interrupted pull resume.
    models : "all", or how many of the hub's listing, in its order.
    model_list : model names (``org/model``) to pull instead of the listing.
    jobs : models fetched at once.
    token, endpoint : for huggingface_hub (default: its own, e.g. ``HF_TOKEN`` and
        ``HF_ENDPOINT``).
    progress : called as models finish, with a `PullProgress`.

    Raises
    ------
    ConfigError
        For an unknown benchmark, jobs / models below 1, or an `out` that is a file or
        a folder of other files (checked before any download).
    DataError
        When the hub's listing cannot be read, or no model has results for the
        benchmark.
    """
    if bench not in BENCHMARKS:
        raise ConfigError(f"bench must be one of {', '.join(BENCHMARKS)}; got {bench!r}",
                          parameters=("bench",))
    if jobs < 1:
        raise ConfigError(f"jobs must be >= 1; got {jobs}", parameters=("jobs",))
    if models != "all" and (not str(models).isdigit() or int(models) < 1):
        raise ConfigError(f"models must be 'all' or a whole number >= 1; got {models!r}",
                          parameters=("models",))
    benchmark = BENCHMARKS[bench]
    out = Path(out).expanduser()
    check_replaceable(out, "out")
    started = time.perf_counter()
    try:
        repos = list_repos(bench, models=models, model_list=model_list, token=token,
                           endpoint=endpoint)
    except MdadError:
        raise
    except Exception as exc:  # the hub client's connection and HTTP errors
        from huggingface_hub import constants

        raise DataError(f"could not list the leaderboard's details on "
                        f"{endpoint or constants.ENDPOINT} ({_reason(exc)}); check the "
                        "network connection and HF_ENDPOINT, or pass a model list") from None
    puller = _Puller(benchmark, out, token=token, endpoint=endpoint)
    outcome = PullOutcome(folder=None)
    done = 0

    def finished() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(PullProgress(done, len(repos), puller.bytes,
                                  time.perf_counter() - started))

    todo = []
    for repo in repos:
        if puller.partial_path(repo).is_file() and _load_partial(puller.partial_path(repo)):
            outcome.resumed.append(model_name(repo))
            finished()
        else:
            todo.append(repo)
    with ThreadPoolExecutor(max_workers=min(jobs, max(len(todo), 1))) as pool:
        futures = {pool.submit(puller.pull_model, repo): repo for repo in todo}
        for future in as_completed(futures):
            name = model_name(futures[future])
            try:
                future.result()
                outcome.pulled.append(name)
            except _Skip as skip:
                outcome.skipped.setdefault(str(skip), []).append(name)
            except Exception as exc:
                outcome.failed[name] = _reason(exc)
            finished()
    outcome.bytes_streamed = puller.bytes
    outcome.folder = _assemble(puller, repos, benchmark, outcome)
    return outcome


def _assemble(puller: _Puller, repos: list[str], benchmark: Benchmark,
              outcome: PullOutcome) -> Path | None:
    """The compact dataset from every partial file of `repos`."""
    from mdad import __version__

    per_model: dict[str, dict[str, _TaskScores]] = {}
    provenance: dict[str, dict] = {}
    for repo in repos:
        path = puller.partial_path(repo)
        saved = _load_partial(path) if path.is_file() else None
        if saved is not None:
            per_model[model_name(repo)], provenance[model_name(repo)] = saved
    if not per_model:
        reasons = [f"{len(names)} {reason}" for reason, names in outcome.skipped.items()]
        if outcome.failed:
            first = next(iter(outcome.failed.items()))
            reasons.append(f"{len(outcome.failed)} failed, e.g. {first[0]}: {first[1]}")
        raise DataError(f"no model has {benchmark.name} details to pull "
                        f"({'; '.join(reasons) or 'none listed'})")
    matrix = build_matrix(per_model, source=f"leaderboard:{benchmark.name}")
    metadata = {
        "benchmark": benchmark.name, "metric": benchmark.metric,
        "source": f"https://huggingface.co/{AUTHOR} (*{SUFFIX})",
        "mdad_version": __version__,
        "pulled_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "provenance": provenance,
        "skipped": outcome.skipped, "failed": outcome.failed,
    }
    return write_compact(puller.out, matrix, metadata)
