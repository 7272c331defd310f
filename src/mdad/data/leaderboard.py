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

What is trusted: the hub at ``HF_ENDPOINT`` to be the hub (its TLS, its answers' meaning).
What is not: the repo ids of its listing and of a model list (each checked against the
hub's id grammar before any path is built from it; a bad one is left out and counted),
the sizes and bodies it sends (a body may not outgrow its listed size, a line its cap,
and every read has an idle timeout, a per-file deadline and a cap on the wait a
``Retry-After`` or ``RateLimit`` header asks for, on every status the hub client
retries), and the files found in the pull's folders (a link is
replaced, never followed; a partial file that cannot be read is fetched again and
replaced by an atomic write, never deleted by a name the pull did not create). One pull
at a time holds a folder (`mdad.safe_io.FileLock`); a partial folder records its
benchmark and metric, and one of another benchmark is refused unless ``force``.

The limits are enforced by `mdad.data.hub_guard`; the partial files are
`mdad.data.leaderboard_partial`'s.
"""

from __future__ import annotations

import errno
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mdad.data.compact import META, check_replaceable, write_compact
from mdad.data.hub_guard import (
    API_BODY_CAP,
    FILE_TIMEOUT,
    IDLE_TIMEOUT,
    MAX_RETRY_AFTER,
    Final,
    Guard,
    Limits,
    Stopped,
    asked_wait,
    guarded_hub,
    reading,
    work_for,
)
from mdad.data.leaderboard_partial import (
    claim,
    load_partial,
    partial_folder,
    recorded,
    save_partial,
)
from mdad.data.lm_eval import (
    MAX_LINE_BYTES,
    TaskScores,
    build_matrix,
    merge_task_scores,
    name_parts,
    read_task_lines,
)
from mdad.errors import ConfigError, DataError, MdadError, running_out
from mdad.safe_io import FileLock, check_hub_id, remove_stale_temporaries

AUTHOR = "open-llm-leaderboard"
SUFFIX = "-details"
RETRIES = 3  # attempts per file (HTTP 429/5xx are retried inside huggingface_hub too)
_CHUNK = 1 << 20
LINE_CAP = MAX_LINE_BYTES  # 256 MiB, as lm_eval's: a sample record is some kB, rarely 1 MB
UNLISTED_CAP = 16 << 30  # the most a file whose size the hub does not list may hold
LOCK_NAME = "mdad.lock"
LIMIT_PARAMETERS = ("idle_timeout", "file_timeout", "deadline", "max_retry_after", "jobs")
INVALID_TOKEN = "Invalid credentials in Authorization header"


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
    skipped : reason -> models: without details for the benchmark, no details repo,
        gated (with what to do), or listed under an id that is not a Hub repo id (those
        are given as the listing wrote them, escaped).
    failed : model -> why its files could not be read after the retries, or which limit
        fired (idle_timeout, file_timeout, max_retry_after, a body over its listed size).
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


def repo_of(name: str, *, where: str = "model list") -> str:
    """A model list entry (``org/model``, ``org__model`` or the details repo) -> the
    details repo id, checked against the hub's id grammar (`where` names the entry).

    Raises
    ------
    DataError
        When the id it makes is no Hub repo id (``open-llm-leaderboard//abs/x``,
        ``../x``): a name made from it could leave the pull's folder.
    """
    name = name.strip()
    if name.startswith(f"{AUTHOR}/"):
        repo = name if name.endswith(SUFFIX) else name + SUFFIX
    else:
        repo = f"{AUTHOR}/{name.replace('/', '__')}{SUFFIX}"
    return check_hub_id(repo, where=where)


def _lines(handle: Any, counter: Callable[[int], None], *,
           where: str = "the stream") -> Iterator[bytes]:
    """The lines of a stream read in 1 MiB chunks, counting the bytes as they come.

    A line spread over many chunks is gathered as pieces and joined once, so reading
    it takes time linear in its length; one longer than `LINE_CAP` stops the read.

    Raises
    ------
    DataError
        Naming `where` and the cap, for a line longer than `LINE_CAP`.
    """
    pieces: list[bytes] = []  # the line begun in earlier chunks
    held = 0
    while True:
        chunk = handle.read(_CHUNK)
        if not chunk:
            break
        counter(len(chunk))
        parts = chunk.split(b"\n")
        if held + len(parts[0]) > LINE_CAP:
            raise Final(f"{where}: a line longer than {LINE_CAP >> 20} MiB (LINE_CAP), "
                         "far more than a sample record takes; the file is damaged or "
                         "not a samples file")
        if len(parts) == 1:
            pieces.append(chunk)
            held += len(chunk)
            continue
        yield b"".join([*pieces, parts[0], b"\n"]) if pieces else parts[0] + b"\n"
        yield from (part + b"\n" for part in parts[1:-1])
        pieces, held = ([parts[-1]], len(parts[-1])) if parts[-1] else ([], 0)
    if pieces:
        yield b"".join(pieces)


# -- one pull --------------------------------------------------------------------------

class _Puller:
    """One pull's shared state: the hub clients, the byte counter and the folder."""

    def __init__(self, benchmark: Benchmark, out: Path, partial: Path, guard: Guard, *,
                 token: str | None, endpoint: str | None) -> None:
        from huggingface_hub import HfApi, HfFileSystem

        self.benchmark, self.out, self.partial, self.guard = benchmark, out, partial, guard
        self.api = HfApi(endpoint=endpoint, token=token)
        self.fs = HfFileSystem(endpoint=endpoint, token=token, skip_instance_cache=True)
        self._lock = threading.Lock()
        self.bytes = 0

    def count(self, n: int) -> None:
        with self._lock:
            self.bytes += n

    def partial_path(self, repo: str) -> Path:
        return self.partial / f"{model_name(repo)}.npz"  # the id is checked: one name

    def files_of(self, repo: str) -> tuple[str, dict[str, int | None]]:
        """The repo's revision (commit sha) and its sample files of the benchmark, with
        their sizes (None: not listed)."""
        with reading(f"{repo} (its list of files)", API_BODY_CAP,
                      self.guard.file_deadline()):
            info = _retried(lambda: self.api.dataset_info(repo, files_metadata=True),
                            self.guard)
        files: dict[str, int | None] = {}
        for sibling in info.siblings or []:
            name = Path(sibling.rfilename).name
            if not name.startswith("samples_") or not name.endswith(".jsonl"):
                continue
            if self.benchmark.holds(name_parts(Path(name))[0]):
                files[sibling.rfilename] = None if sibling.size is None else int(sibling.size)
        return str(info.sha), files

    def read_file(self, repo: str, revision: str, path: str, size: int | None) -> TaskScores:
        """One sample file, streamed and reduced; retried when cut short, not when a
        limit fired (the file's deadline covers all its attempts) nor when the whole
        listed size arrived and its records are at fault (another download would bring
        the same bytes)."""
        what = f"{repo}/{path}"
        deadline = self.guard.file_deadline()
        last: Exception | None = None
        for _ in range(RETRIES):
            streamed = 0

            def counted(n: int) -> None:
                nonlocal streamed
                streamed += n
                self.count(n)

            try:
                with reading(what, UNLISTED_CAP if size is None else size, deadline):
                    with self.fs.open(f"datasets/{repo}/{path}", "rb", revision=revision,
                                      block_size=0) as handle:
                        scores = read_task_lines(_lines(handle, counted, where=what), what,
                                                 self.benchmark.metric)
                if size is not None and streamed != size:
                    raise DataError(f"{what}: {streamed} of {size} bytes arrived")
                return scores
            except (Final, Stopped):
                raise
            except Exception as exc:  # a cut stream, a parse error of a cut line, HTTP
                if (_refusal(exc) is not None or _fatal(exc) is not None
                        or running_out(exc)):  # memory, not the network: no retry
                    raise
                if isinstance(exc, DataError) and size is not None and streamed == size:
                    raise  # the whole file arrived: its fault is its own, not the network's
                last = exc
        raise DataError(f"{what}: could not be read in {RETRIES} attempts "
                        f"({_reason(last)})")

    def pull_model(self, repo: str) -> None:
        """Fetch one model's files of the benchmark and save its partial file."""
        try:
            revision, files = self.files_of(repo)
            if not files:
                raise _Skip(f"no {self.benchmark.name} details")
            by_task: dict[str, list[str]] = {}
            for path in sorted(files, key=lambda p: (*name_parts(Path(p)), p)):  # oldest first
                by_task.setdefault(name_parts(Path(path))[0], []).append(path)
            tasks = {task: merge_task_scores([self.read_file(repo, revision, p, files[p])
                                              for p in paths])
                     for task, paths in by_task.items()}
        except Exception as exc:
            refusal = _refusal(exc)
            if refusal == "gated":
                raise _Skip(_gated_reason(repo)) from None
            if refusal == "missing":
                raise _Skip("no details repo on the hub (check the model's name)") from None
            raise
        provenance = {"repo": repo, "revision": revision, "files": sorted(files),
                      "benchmark": self.benchmark.name, "metric": self.benchmark.metric,
                      "pulled_at": datetime.now(UTC).isoformat(timespec="seconds")}
        if self.guard.stop.is_set():  # the lock may be gone: write nothing more
            raise Stopped()
        save_partial(self.partial_path(repo), tasks, provenance)


def _retried(call: Callable[[], Any], guard: Guard) -> Any:
    """`call`, retried with backoff on HTTP 429 and 5xx, honouring Retry-After up to
    the guard's cap (the hub client retries its file reads and listings itself, not its
    repo info); the wait ends when the pull stops."""
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
            asked = asked_wait(exc.response)
            if guard.stop.wait(min(asked if asked is not None else wait,
                                   guard.limits.max_retry_after)):
                raise Stopped() from None
            wait = min(wait * 2, 30.0)
    raise AssertionError("unreachable")


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen and len(seen) < 10:
        seen.append(exc)
        yield exc
        exc = exc.__cause__ or exc.__context__


def _refusal(exc: BaseException) -> str | None:
    """How the hub refused: "token" (HF_TOKEN invalid: 401 with the hub's invalid
    credentials message), "gated" (403, GatedRepo), "missing" (RepositoryNotFound: a
    404, or the 401 the hub gives an anonymous request for a repo it does not show),
    else None."""
    for cause in _chain(exc):
        response = getattr(cause, "response", None)
        status = getattr(response, "status_code", None)
        message = response.headers.get("X-Error-Message", "") if status else ""
        if status == 401 and message == INVALID_TOKEN:
            return "token"
        if type(cause).__name__ == "GatedRepoError" or status == 403:
            return "gated"
        if type(cause).__name__ == "RepositoryNotFoundError" or status in (401, 404):
            return "missing"
    return None


def _fatal(exc: BaseException) -> str | None:
    """"space" or "files" when `exc` is a disk full or too many open files: every
    model would meet it, so the pull stops; else None."""
    for cause in _chain(exc):
        number = getattr(cause, "errno", None)
        if number in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
            return "space"
        if number in (errno.EMFILE, errno.ENFILE) or "Too many open files" in str(cause):
            return "files"
    return None


def _gated_reason(repo: str) -> str:
    return (f"gated or not authorised: accept the dataset's terms at "
            f"https://huggingface.co/datasets/{repo} with your account, or set HF_TOKEN")


def _reason(exc: BaseException | None) -> str:
    """`exc` on one line, whole: only words over 160 characters (paths, URLs) lose
    their middle, keeping the file's name at their end."""
    if exc is None:
        return "unknown"
    text = str(exc) if isinstance(exc, MdadError) else f"{type(exc).__name__}: {exc}"
    return " ".join(word if len(word) <= 160 else f"{word[:40]}...{word[-110:]}"
                    for word in text.split())


@dataclass
class Listing:
    """The details repos to pull, and the listing's entries left out (reason -> ids,
    escaped)."""

    repos: list[str]
    rejected: dict[str, list[str]] = field(default_factory=dict)


def list_repos(bench: str, *, models: int | str = "all", model_list: list[str] | None = None,
               token: str | None = None, endpoint: str | None = None) -> Listing:
    """The details repos to pull: those of `model_list`, or the hub's listing of
    ``open-llm-leaderboard/*-details`` in its order (the first `models` valid ones).

    An entry of the listing that is no Hub repo id, or not under
    ``open-llm-leaderboard``, is left out and counted in `Listing.rejected`.

    Raises
    ------
    DataError
        For a `model_list` entry that makes no Hub repo id (naming its position).
    """
    from huggingface_hub import HfApi

    if model_list is not None:
        names = [name for name in model_list if name.strip()]
        return Listing(list(dict.fromkeys(
            repo_of(name, where=f"model_list entry {k}") for k, name in
            enumerate(names, start=1))))
    api = HfApi(endpoint=endpoint, token=token)
    listing = Listing([])
    for info in api.list_datasets(author=AUTHOR, search=SUFFIX):
        repo = str(info.id)
        if not repo.endswith(SUFFIX):
            continue  # the organisation's other datasets (contents, requests)
        try:
            check_hub_id(repo, where="the hub's listing")
            reason = None if repo.startswith(f"{AUTHOR}/") else f"not under {AUTHOR}"
        except DataError:
            reason = "not a Hub repo id (namespace/name), so no folder name can be made of it"
        if reason is not None:
            listing.rejected.setdefault(f"listed by the hub under an id {reason}; left out",
                                        []).append(ascii(repo[:200])[1:-1])
            continue
        listing.repos.append(repo)
        if models != "all" and len(listing.repos) >= int(models):
            break
    return listing


_ONE_PULL = threading.Lock()  # the hub client's factory is the process's: one pull at once


def pull_leaderboard(bench: str, out: Path, *, models: int | str = "all",
                     model_list: list[str] | None = None, jobs: int = 4,
                     token: str | None = None, endpoint: str | None = None,
                     progress: Callable[[PullProgress], None] | None = None,
                     force: bool = False, idle_timeout: float = IDLE_TIMEOUT,
                     file_timeout: float | None = FILE_TIMEOUT, deadline: float | None = None,
                     max_retry_after: float = MAX_RETRY_AFTER) -> PullOutcome:
    """Pull benchmark `bench` of the Open LLM Leaderboard into the compact dataset `out`.

    Parameters
    ----------
    bench : one of `BENCHMARKS` (gpqa, gpqa-diamond, bbh, mmlu-pro, musr).
    out : the dataset folder (e.g. ``~/.cache/mdad/leaderboard/bbh``), replaced whole
        at the end; the partial files beside it (``.<out>.partial/``) let an
        interrupted pull resume.
    models : "all", or how many of the hub's listing, in its order.
    model_list : model names (``org/model``) to pull instead of the listing.
    jobs : models fetched at once.
    token, endpoint : for huggingface_hub (default: its own, e.g. ``HF_TOKEN`` and
        ``HF_ENDPOINT``).
    progress : called as models finish, with a `PullProgress`.
    force : replace an `out`, or a partial folder, of another benchmark or metric.
    idle_timeout : seconds a read waits for a byte (default 60).
    file_timeout : seconds one file may take over all its attempts (default 1800; None:
        no limit). It is what stops a body fed a byte at a time.
    deadline : seconds the whole pull may take (default None: no limit); when it
        passes, the pull stops, keeping the models finished.
    max_retry_after : the longest wait (seconds, default 60) a ``Retry-After`` may ask;
        a longer one fails the file at once.

    Raises
    ------
    ConfigError
        For an unknown benchmark, jobs / models below 1, a limit that is not positive,
        an `out` that is a link, a file, a folder of other files or (without `force`)
        another benchmark's dataset or partial folder, a folder another pull holds
        (naming its pid), or a token the hub calls invalid (401).
    DataError
        When the hub's listing cannot be read, a `model_list` entry is no repo id, the
        disk is full or too many files are open, the `deadline` passes, or no model has
        results for the benchmark.
    KeyboardInterrupt
        Ctrl-C (or any BaseException, such as the CLI's SIGTERM) within 0.2 s; a note
        on it says what was kept. The finished models' partial files stay.
    """
    benchmark, limits = _checked(bench, jobs, models, idle_timeout, file_timeout, deadline,
                                 max_retry_after)
    out = Path(out).expanduser()
    _check_out(out, benchmark, force)
    repos_given = (None if model_list is None else
                   list_repos(bench, model_list=model_list).repos)  # checked before all
    partial = partial_folder(out)
    if not _ONE_PULL.acquire(blocking=False):
        raise ConfigError("another pull runs in this process; wait for it to finish")
    stop = threading.Event()
    tally = _Tally()
    try:
        with FileLock(partial / LOCK_NAME, f"the pull into {out}"):
            remove_stale_temporaries(partial)  # a killed pull's, under our lock
            claim(partial, benchmark, force)
            guard = Guard(limits, stop)
            with guarded_hub(guard):
                return _pull(benchmark, out, partial, guard, repos_given, tally,
                             models=models, jobs=jobs, token=token, endpoint=endpoint,
                             progress=progress)
    except MdadError:
        raise
    except Stopped:  # in this thread only the deadline stops, at whatever stage
        raise _past_deadline(limits, tally, partial) from None
    except Exception as exc:  # a disk full, too many open files: one line; else a bug
        error = _fatal_error(exc, partial, jobs)
        if error is None:
            raise
        raise error from None
    finally:
        stop.set()  # workers still in a read write nothing more
        _ONE_PULL.release()


def _checked(bench: str, jobs: int, models: int | str, idle_timeout: float,
             file_timeout: float | None, deadline: float | None,
             max_retry_after: float) -> tuple[Benchmark, Limits]:
    if bench not in BENCHMARKS:
        raise ConfigError(f"bench must be one of {', '.join(BENCHMARKS)}; got {bench!r}",
                          parameters=("bench",))
    if jobs < 1:
        raise ConfigError(f"jobs must be >= 1; got {jobs}", parameters=("jobs",))
    if models != "all" and (not str(models).isdigit() or int(models) < 1):
        raise ConfigError(f"models must be 'all' or a whole number >= 1; got {models!r}",
                          parameters=("models",))
    for name, value, optional in (("idle_timeout", idle_timeout, False),
                                  ("file_timeout", file_timeout, True),
                                  ("deadline", deadline, True),
                                  ("max_retry_after", max_retry_after, False)):
        if value is None and optional:
            continue
        if not isinstance(value, int | float) or not 0 < value < float("inf"):
            raise ConfigError(f"{name} must be a number of seconds > 0; got {value!r}",
                              parameters=(name,))
    return BENCHMARKS[bench], Limits(float(idle_timeout), file_timeout, deadline,
                                     float(max_retry_after))


def _check_out(out: Path, benchmark: Benchmark, force: bool) -> None:
    """Refuse an `out` that is a link, not replaceable (`check_replaceable`), or
    another benchmark's dataset unless `force`."""
    if out.is_symlink():
        raise ConfigError(f"out {out} is a symbolic link, which writing the dataset would "
                          "not follow; give the folder it points to, or another folder",
                          parameters=("out",))
    check_replaceable(out, "out")
    if out.is_dir() and (out / META).is_file() and not force:
        held = recorded(out / META)
        if (held.get("benchmark"), held.get("metric")) != (benchmark.name, benchmark.metric):
            raise ConfigError(
                f"out {out} holds the dataset of another pull ({held.get('benchmark')}, "
                f"{held.get('metric')}), not {benchmark.name} ({benchmark.metric}); give "
                "another out, or force to replace it", parameters=("out", "force"))


def _fatal_error(exc: BaseException, partial: Path, jobs: int) -> MdadError | None:
    """The one-line error of a disk full or too many open files, else None."""
    kind = _fatal(exc)
    if kind == "space":
        where = next((str(c.filename) for c in _chain(exc)
                      if getattr(c, "filename", None)), str(partial))
        return DataError(f"{where}: no space left on device; free some space, then run the "
                         "same pull again: it resumes from the models kept in "
                         f"{partial}")
    if kind == "files":
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        return DataError(f"too many open files (the limit is {soft}); raise it (ulimit -n "
                         f"1024) or lower jobs (now {jobs})", parameters=("jobs",))
    return None


@dataclass
class _Tally:
    """How far a pull got, for the error of its deadline: the models still to fetch
    (None before the listing was read), and those kept (fetched or resumed) so far."""

    left: int | None = None
    kept: int = 0


def _past_deadline(limits: Limits, tally: _Tally, partial: Path) -> DataError:
    """The one-line error of a pull stopped by its deadline."""
    where = ("before the hub's listing was read" if tally.left is None
             else f"with {tally.left} models to go")
    return DataError(f"the pull reached its deadline ({limits.deadline:g} s) {where}; "
                     f"{tally.kept} models are kept as partial files in {partial}; pull "
                     "again with a longer deadline, or none: it resumes from them",
                     parameters=("deadline",))


def _pull(benchmark: Benchmark, out: Path, partial: Path, guard: Guard,
          repos_given: list[str] | None, tally: _Tally, *, models: int | str, jobs: int,
          token: str | None, endpoint: str | None,
          progress: Callable[[PullProgress], None] | None) -> PullOutcome:
    """The pull of `pull_leaderboard`, holding its folder; `tally` follows its course.

    Raises
    ------
    Stopped
        When the deadline passes (`pull_leaderboard` says so in one line).
    """
    started = time.perf_counter()
    if repos_given is None:
        try:
            with reading("the hub's listing", API_BODY_CAP, guard.file_deadline()):
                listing = list_repos(benchmark.name, models=models, token=token,
                                     endpoint=endpoint)
        except (MdadError, Stopped):
            raise
        except Exception as exc:  # the hub client's connection and HTTP errors
            from huggingface_hub import constants

            if _refusal(exc) == "token":
                raise _invalid_token(endpoint) from None
            if _fatal(exc):
                raise
            raise DataError(f"could not list the leaderboard's details on "
                            f"{endpoint or constants.ENDPOINT} ({_reason(exc)}); check the "
                            "network connection and HF_ENDPOINT, or pass a model list"
                            ) from None
    else:
        listing = Listing(repos_given)
    repos = listing.repos
    puller = _Puller(benchmark, out, partial, guard, token=token, endpoint=endpoint)
    outcome = PullOutcome(folder=None, skipped=dict(listing.rejected))
    done = 0

    def finished() -> None:
        nonlocal done
        done += 1
        tally.kept = len(outcome.pulled) + len(outcome.resumed)
        if progress is not None:
            progress(PullProgress(done, len(repos), puller.bytes,
                                  time.perf_counter() - started))

    todo = []
    for repo in repos:
        if load_partial(puller.partial_path(repo), benchmark) is not None:
            outcome.resumed.append(model_name(repo))
            finished()
        else:
            todo.append(repo)
    tally.left = left = len(todo)
    try:
        for repo, exc in _fetched(puller, todo, jobs):
            name = model_name(repo)
            if isinstance(exc, Stopped):  # a worker met the deadline first
                raise Stopped()
            if exc is None:
                outcome.pulled.append(name)
            elif isinstance(exc, _Skip):
                outcome.skipped.setdefault(str(exc), []).append(name)
            elif _refusal(exc) == "token":
                raise _invalid_token(endpoint)
            elif _fatal(exc):
                raise _fatal_error(exc, partial, jobs) or DataError(_reason(exc))
            elif running_out(exc):  # every model would meet it: one line, then resume
                exc.add_note(f"continue with: the same pull, which keeps the {tally.kept} "
                             f"models done (partial files in {partial})")
                raise exc
            else:
                outcome.failed[name] = _reason(exc)
            tally.left = left = left - 1
            finished()
    except BaseException as stop:
        guard.stop.set()
        if not isinstance(stop, Exception):  # Ctrl-C, SIGTERM: say what stays
            stop.add_note(_kept(tally.kept, partial))
        raise
    outcome.bytes_streamed = puller.bytes
    outcome.folder = _assemble(puller, repos, benchmark, outcome)
    return outcome


def _kept(kept: int, partial: Path) -> str:
    return (f"{kept} models are kept as partial files in {partial}; the same pull again "
            "resumes from them")


def _invalid_token(endpoint: str | None) -> ConfigError:
    from huggingface_hub import constants

    return ConfigError(f"the hub at {endpoint or constants.ENDPOINT} calls the token invalid "
                       "(401: invalid credentials); check HF_TOKEN (or the token saved by "
                       "`hf auth login`), or unset it: the leaderboard's details are public")


def _fetched(puller: _Puller, todo: list[str], jobs: int
             ) -> Iterator[tuple[str, BaseException | None]]:
    """(repo, None or why it failed) as each model of `todo` finishes, fetched by `jobs`
    daemon threads: on Ctrl-C, SIGTERM or the deadline the main thread leaves at once
    (within 0.1 s), not waiting for a thread blocked in a read; the stop event keeps
    them from starting another model or writing another file.

    Raises
    ------
    Stopped
        When the pull's deadline passes.
    """
    tasks: queue.SimpleQueue[str] = queue.SimpleQueue()
    for repo in todo:
        tasks.put(repo)
    results: queue.SimpleQueue[tuple[str, BaseException | None]] = queue.SimpleQueue()
    stop = puller.guard.stop

    def work() -> None:
        work_for(puller.guard)
        while not stop.is_set():
            try:
                repo = tasks.get_nowait()
            except queue.Empty:
                return
            try:
                puller.pull_model(repo)
                results.put((repo, None))
            except BaseException as exc:  # reported by the main thread
                results.put((repo, exc))

    for k in range(min(jobs, max(len(todo), 1))):
        threading.Thread(target=work, name=f"mdad-pull-{k}", daemon=True).start()
    for _ in todo:
        while True:
            if puller.guard.deadline is not None and time.monotonic() >= puller.guard.deadline:
                raise Stopped()
            try:
                yield results.get(timeout=0.1)
                break
            except queue.Empty:
                continue


def _assemble(puller: _Puller, repos: list[str], benchmark: Benchmark,
              outcome: PullOutcome) -> Path | None:
    """The compact dataset from every partial file of `repos`."""
    from mdad._version import version

    per_model: dict[str, dict[str, TaskScores]] = {}
    provenance: dict[str, dict] = {}
    for repo in repos:
        saved = load_partial(puller.partial_path(repo), benchmark)
        if saved is not None:
            per_model[model_name(repo)], provenance[model_name(repo)] = saved
    if not per_model:
        reasons = [f"{len(names)} {reason}" for reason, names in outcome.skipped.items()]
        if outcome.failed:
            first = next(iter(outcome.failed.items()))
            reasons.append(f"{len(outcome.failed)} failed, e.g. {first[0]}: {first[1]}")
        raise DataError(f"no model has {benchmark.name} details to pull "
                        f"({'; '.join(reasons) or 'none listed'})",
                        parameters=LIMIT_PARAMETERS)
    matrix = build_matrix(per_model, source=f"leaderboard:{benchmark.name}")
    metadata = {
        "benchmark": benchmark.name, "metric": benchmark.metric,
        "source": f"https://huggingface.co/{AUTHOR} (*{SUFFIX})",
        "mdad_version": version(),
        "pulled_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "provenance": provenance,
        "skipped": outcome.skipped, "failed": outcome.failed,
    }
    return write_compact(puller.out, matrix, metadata)
