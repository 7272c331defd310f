"""A local stand-in for the parts of the Hugging Face Hub's HTTP API that `mdad data pull`
uses, served to the real `huggingface_hub` client through ``HF_ENDPOINT``.

This machine cannot reach the hub, so the tests run the real client code path against
this server instead (docs/how-to/pull-the-leaderboard.md says so). It implements:

- ``GET /api/datasets?author=...&search=...``: the listing (one page);
- ``GET /api/datasets/{repo}`` and ``/api/datasets/{repo}/revision/{rev}``: a repo's
  commit sha and its files with their sizes (``siblings``), gated flag included;
- ``GET /api/datasets/{repo}/tree/{rev}/{path}``: a folder's entries (the file
  system's listing, which it consults before it streams a file);
- ``GET`` and ``HEAD /datasets/{repo}/resolve/{rev}/{path}``: a file's bytes, with
  ``Range: bytes=N-`` support; a gated repo answers 403 with ``X-Error-Code:
  GatedRepo``, as the hub does.

Faults are injected per file, each used once, in order: ``"429"`` (with
``Retry-After: 1``), ``"500"``, and ``"truncate"`` (a full ``Content-Length`` but the
connection closed after half the body).

Hostile modes, per file and lasting (``Repo.modes``), stand for a server that stalls a
client or feeds it more than it asked for: ``"drip"`` (the listed body, one byte every
`HubStandIn.drip_seconds`), ``"stall"`` (the headers, then nothing), ``"longer"`` (the
body and then `HubStandIn.extra_bytes` more blank lines, its ``Content-Length``
saying so, while the listing keeps the true size), ``"endless"`` (blank lines without
end, chunked), ``"retry-after:N"`` (429 with ``Retry-After: N``, every time),
``"<status>-retry-after:N"`` (that status, e.g. 500, 502, 503, 504 or 408, with
``Retry-After: N``, every time) and ``"ratelimit:N"`` (429 with the hub's ``RateLimit:
"api";r=0;t=N`` and a ``Retry-After: 1`` the client reads only after it).
`HubStandIn.listed` adds ids to the listing only (a hostile listing's), and
`HubStandIn.tokens`, when set, makes any other bearer token a 401 with the hub's
"Invalid credentials in Authorization header".
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import numpy as np


@dataclass
class Repo:
    """One dataset repo: its files (path -> bytes), whether it is gated, and faults
    still to inject (path -> list of "429", "500", "truncate")."""

    files: dict[str, bytes]
    gated: bool = False
    faults: dict[str, list[str]] = field(default_factory=dict)
    modes: dict[str, str] = field(default_factory=dict)

    @property
    def sha(self) -> str:
        digest = hashlib.sha1()
        for path in sorted(self.files):
            digest.update(path.encode() + self.files[path])
        return digest.hexdigest()


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        # a client that hangs up (a pull timing out, a test's Ctrl-C) is what the
        # hostile modes provoke: not worth a traceback in the test log
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class HubStandIn:
    """The server; `repos` maps repo ids to `Repo`s; `requests` records (method, path,
    status) of every request."""

    def __init__(self, repos: dict[str, Repo]) -> None:
        self.repos = repos
        self.requests: list[tuple[str, str, int]] = []
        self.listed: list[str] = []
        self.tokens: set[str] | None = None
        self.drip_seconds = 0.5
        self.extra_bytes = 8 << 20
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> HubStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()  # ends the drips and endless bodies
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                self._route(head=True)

            def do_GET(self) -> None:
                self._route(head=False)

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None,
                      head: bool = False, cut: bool = False) -> None:
                with hub._lock:
                    hub.requests.append((self.command, self.path, status))
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                if cut:
                    self.send_header("Connection", "close")
                self.end_headers()
                if head:
                    return
                if cut:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def _json(self, status: int, value: object, headers: dict | None = None) -> None:
                self._send(status, json.dumps(value).encode(),
                           {"Content-Type": "application/json", **(headers or {})})

            def _route(self, head: bool) -> None:
                url = urlparse(self.path)
                given = self.headers.get("Authorization", "").removeprefix("Bearer ")
                if hub.tokens is not None and given and given not in hub.tokens:
                    return self._json(401, {"error": "Invalid credentials"}, {
                        "X-Error-Message": "Invalid credentials in Authorization header"})
                parts = [unquote(p) for p in url.path.strip("/").split("/")]
                if parts[:2] == ["api", "datasets"] and len(parts) == 2:
                    return self._listing(parse_qs(url.query))
                if parts[:2] == ["api", "datasets"] and len(parts) >= 6 and parts[4] == "tree":
                    recursive = parse_qs(url.query).get("recursive", ["false"])[0] == "true"
                    return self._tree("/".join(parts[2:4]), "/".join(parts[6:]), recursive)
                if parts[:2] == ["api", "datasets"] and len(parts) >= 4:
                    return self._info("/".join(parts[2:4]))
                if parts[:1] == ["datasets"] and len(parts) >= 6 and parts[3] == "resolve":
                    return self._file("/".join(parts[1:3]), "/".join(parts[5:]), head)
                self._json(404, {"error": "not found"})

            def _listing(self, query: dict[str, list[str]]) -> None:
                author = query.get("author", [""])[0]
                search = query.get("search", [""])[0]
                found = [{"id": repo_id, "_id": repo_id, "author": repo_id.split("/")[0],
                          "private": False, "gated": "manual" if repo.gated else False,
                          "sha": repo.sha, "tags": []}
                         for repo_id, repo in hub.repos.items()
                         if repo_id.startswith(f"{author}/") and search in repo_id]
                found += [{"id": repo_id, "_id": repo_id, "author": author, "private": False,
                           "gated": False, "sha": "0" * 40, "tags": []}
                          for repo_id in hub.listed]
                self._json(200, found)

            def _info(self, repo_id: str) -> None:
                repo = hub.repos.get(repo_id)
                if repo is None:
                    return self._json(404, {"error": "Repository not found"},
                                      {"X-Error-Code": "RepoNotFound"})
                siblings = [{"rfilename": path, "size": len(data),
                             "blobId": hashlib.sha1(data).hexdigest()}
                            for path, data in sorted(repo.files.items())]
                self._json(200, {"id": repo_id, "_id": repo_id, "sha": repo.sha,
                                 "private": False,
                                 "gated": "manual" if repo.gated else False,
                                 "disabled": False, "siblings": siblings, "tags": [],
                                 "lastModified": "2024-06-26T17:09:20.000Z"})

            def _tree(self, repo_id: str, folder: str, recursive: bool) -> None:
                repo = hub.repos.get(repo_id)
                if repo is None:
                    return self._json(404, {"error": "Repository not found"},
                                      {"X-Error-Code": "RepoNotFound"})
                prefix = f"{folder}/" if folder else ""
                entries: dict[str, dict] = {}
                for path, data in sorted(repo.files.items()):
                    if not path.startswith(prefix):
                        continue
                    rest = path[len(prefix):].split("/")
                    for depth in range(1, len(rest) if recursive else 1):
                        name = prefix + "/".join(rest[:depth])
                        entries.setdefault(name, {"type": "directory", "oid": "0" * 40,
                                                  "size": 0, "path": name})
                    if len(rest) > 1 and not recursive:
                        name = prefix + rest[0]
                        entries.setdefault(name, {"type": "directory", "oid": "0" * 40,
                                                  "size": 0, "path": name})
                    else:
                        entries[path] = {"type": "file", "path": path, "size": len(data),
                                         "oid": hashlib.sha1(data).hexdigest()}
                self._json(200, list(entries.values()))

            def _file(self, repo_id: str, path: str, head: bool) -> None:
                repo = hub.repos.get(repo_id)
                if repo is None or path not in repo.files:
                    return self._json(404, {"error": "Entry not found"},
                                      {"X-Error-Code": "EntryNotFound"})
                if repo.gated:
                    return self._json(403, {"error": f"Access to dataset {repo_id} is "
                                            "restricted. You must have access to it."},
                                      {"X-Error-Code": "GatedRepo",
                                       "X-Error-Message": "Access restricted"})
                faults = repo.faults.get(path, [])
                fault = faults.pop(0) if faults and not head else None
                if fault == "429":
                    return self._json(429, {"error": "rate limited"}, {"Retry-After": "1"})
                if fault == "500":
                    return self._json(500, {"error": "internal"})
                mode = repo.modes.get(path, "")
                if mode.startswith("retry-after:"):
                    return self._json(429, {"error": "rate limited"},
                                      {"Retry-After": mode.split(":", 1)[1]})
                if "-retry-after:" in mode and not head:
                    status, seconds = mode.split("-retry-after:")
                    return self._json(int(status), {"error": "come back later"},
                                      {"Retry-After": seconds})
                if mode.startswith("ratelimit:") and not head:
                    return self._json(429, {"error": "rate limited"}, {
                        "RateLimit": f'"api";r=0;t={mode.split(":", 1)[1]}',
                        "RateLimit-Policy": '"fixed window";"api";q=500;w=300',
                        "Retry-After": "1"})
                if mode and not head:
                    return self._hostile(mode, repo.files[path])
                data = repo.files[path]
                start = 0
                header = self.headers.get("Range", "")
                if header.startswith("bytes="):
                    start = int(header[6:].split("-")[0] or 0)
                headers = {"Content-Type": "application/octet-stream", "ETag": f'"{repo.sha}"',
                           "X-Repo-Commit": repo.sha, "Accept-Ranges": "bytes"}
                if start:
                    if start >= len(data):
                        return self._send(416, b"", headers, head)
                    headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
                    return self._send(206, data[start:], headers, head,
                                      cut=fault == "truncate")
                self._send(200, data, headers, head, cut=fault == "truncate")

            def _hostile(self, mode: str, data: bytes) -> None:
                with hub._lock:
                    hub.requests.append((self.command, self.path, 200))
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                if mode == "endless":
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    extra = hub.extra_bytes if mode == "longer" else 0
                    self.send_header("Content-Length", str(len(data) + extra))
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    if mode == "drip":
                        for k in range(len(data)):
                            if hub.closing.wait(hub.drip_seconds):
                                return
                            self.wfile.write(data[k:k + 1])
                            self.wfile.flush()
                    elif mode == "stall":
                        hub.closing.wait(600)
                    elif mode == "longer":
                        self.wfile.write(data + b"\n" * hub.extra_bytes)
                    elif mode == "endless":
                        piece = b"\n" * 65536
                        while not hub.closing.is_set():
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                except OSError:  # the client gave up: as it should
                    return

        return Handler


# ---- fixture repos: the Open LLM Leaderboard's details layout

AUTHOR = "open-llm-leaderboard"
TASKS = {"leaderboard_bbh_navigate": ("Yes", "No"),
         "leaderboard_bbh_snarks": ("(A)", "(B)")}
DOCS = {"leaderboard_bbh_navigate": 6, "leaderboard_bbh_snarks": 5}
OLD, NEW = "2024-06-26T17-09-20.123456", "2024-07-01T10-00-00.000001"


def record(task: str, doc: int, rng: np.random.Generator) -> dict:
    """One sample record as the leaderboard's details write it (lm-eval's schema)."""
    options = TASKS[task]
    gold = int(rng.integers(len(options)))
    lls = [round(float(v), 6) for v in rng.normal(-2, 1, len(options))]
    arguments = {f"gen_args_{k}": {"arg_0": f"{task} question {doc}\nA:", "arg_1": f" {o}"}
                 for k, o in enumerate(options)}
    return {"doc_id": doc, "doc": {"input": f"{task} question {doc}", "target": options[gold]},
            "target": options[gold], "arguments": arguments,
            "resps": [[[str(v), "False"]] for v in lls],
            "filtered_resps": [[str(v), "False"] for v in lls], "filter": "none",
            "metrics": ["acc_norm"], "doc_hash": f"{doc:064x}", "prompt_hash": "0" * 64,
            "target_hash": "1" * 64, "acc_norm": float(int(np.argmax(lls)) == gold)}


def samples(task: str, docs: range, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    return "".join(json.dumps(record(task, d, rng)) + "\n" for d in docs).encode()


def fixture_repos() -> dict[str, Repo]:
    repos: dict[str, Repo] = {}
    for k in range(10):
        model = f"org{k}__model-{k}"
        files = {f"{model}/results_{OLD}.json": b'{"results": {}}\n'}
        for t, task in enumerate(TASKS):
            files[f"{model}/samples_{task}_{OLD}.jsonl"] = samples(task, range(DOCS[task]),
                                                                  100 * k + t)
        if k == 0:  # a second evaluation of one task: docs 0-2 again, other answers
            files[f"{model}/samples_leaderboard_bbh_navigate_{NEW}.jsonl"] = samples(
                "leaderboard_bbh_navigate", range(3), 999)
            files[f"{model}/samples_leaderboard_gpqa_main_{OLD}.jsonl"] = b""  # another bench
        if k == 9:  # no bbh details at all
            files = {f"{model}/samples_leaderboard_mmlu_pro_{OLD}.jsonl": samples(
                "leaderboard_bbh_snarks", range(2), 5)}
        repos[f"{AUTHOR}/{model}-details"] = Repo(files)
    repos[f"{AUTHOR}/org1__model-1-details"].faults = {
        f"org1__model-1/samples_leaderboard_bbh_navigate_{OLD}.jsonl": ["429", "500"],
        f"org1__model-1/samples_leaderboard_bbh_snarks_{OLD}.jsonl": ["truncate"]}
    repos[f"{AUTHOR}/org8__model-8-details"].gated = True
    repos[f"{AUTHOR}/contents"] = Repo({"data.parquet": b"PAR1"})  # not a details repo
    return repos


def write_local_copy(repos: dict[str, Repo], root: Path, names: list[str]) -> Path:
    """The same files as an lm-eval --output_path (one folder per model)."""
    for repo_id in names:
        for path, data in repos[repo_id].files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return root


def pull_cli(tmp_path: Path, endpoint: str, *args: str) -> subprocess.CompletedProcess:
    """`mdad` run against the stand-in at `endpoint`, with caches under `tmp_path`."""
    env = {**os.environ, "HF_ENDPOINT": endpoint, "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "HF_HOME": str(tmp_path / "hf"), "MDAD_DATA": str(tmp_path / "cache" / "mdad")}
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("HF_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "mdad", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
