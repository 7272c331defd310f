"""Every example of the documentation runs, against the real data (issue 38).

The README and every page under ``docs/`` are read as a user reads them: each fenced
bash and python block runs in order, in a fresh folder per page (so a page's later
blocks see the files its earlier ones wrote), with ``mdad`` and the project's Python
first on ``PATH`` and ``MDAD_DATA`` pointing at the shared data. A fenced text block
after a run block is that block's output as the page shows it: each of its lines,
whitespace collapsed, must appear in the real output, in order (a line ``...`` skips
any amount). A block that cannot run here says why on the line before it,
``<!-- not run: REASON -->``; the reasons are few and of known kinds (test below).

``mkdocs build --strict`` builds the site: a broken link, a missing anchor, a
reference the API pages cannot resolve or a docstring griffe cannot parse fails it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import shared_data

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# a fenced block, indented too (inside a list item)
FENCE = re.compile(r"^(?P<indent> *)```(?P<kind>\w*)[^\n]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$",
                   re.S | re.M)
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")
RUNNABLE = {"bash", "python"}
BLOCK_SECONDS = 600


@dataclass
class Block:
    kind: str
    code: str
    line: int
    outputs: list[str] = field(default_factory=list)
    not_run: str | None = None


def blocks(page: Path) -> list[Block]:
    """The page's run blocks, each with the text blocks that show its output."""
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    for match in FENCE.finditer(text):
        kind, code = match["kind"], textwrap.dedent(match["code"])
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = NOT_RUN.search(before)
        if kind in RUNNABLE:
            found.append(Block(kind, code, line, not_run=reason and reason.group(1)))
        elif kind == "text" and found and found[-1].not_run is None:
            found[-1].outputs.append(code)
    return found


def collapse(text: str) -> str:
    return " ".join(text.split())


def find_whole(text: str, wanted: str, start: int) -> int:
    """Where `wanted` occurs in `text` from `start` without cutting a number short at
    either end ("size": 100 is not in "size": 1000, nor 0.1 in 0.12); -1 if nowhere."""
    pattern = re.compile(r"(?<![\d.])" * wanted[:1].isdigit() + re.escape(wanted)
                         + r"(?!\.?\d)" * wanted[-1:].isdigit())
    match = pattern.search(text, start)
    return match.start() if match else -1


def check_output(expected: str, actual: str, where: str) -> None:
    """Each line of `expected`, whitespace collapsed, appears in `actual` after the
    previous one; a `...` line skips."""
    seen = collapse(actual)
    at = 0
    for line in expected.splitlines():
        wanted = collapse(line)
        if not wanted or wanted == "...":
            continue
        found = find_whole(seen, wanted, at)
        assert found >= 0, f"{where}: the page shows {wanted!r}, the run printed:\n{actual}"
        at = found + len(wanted)


def comment_numbers(code: str) -> list[str]:
    """The decimal numbers a bash block's comments state, such as a result's."""
    return [number for line in code.splitlines() if " # " in line
            for number in re.findall(r"\d+\.\d+", line.split(" # ", 1)[1])]


def run_block(block: Block, folder: Path, where: str) -> str:
    env = {**os.environ, "MDAD_DATA": str(shared_data()), "COLUMNS": "200",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONUNBUFFERED": "1"}
    if block.kind == "bash":
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    else:
        script = folder / f"block_{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        command = [sys.executable, script.name]
    # its own session, so that a block that leaves a process behind is ended with it
    with subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, start_new_session=True) as proc:
        try:
            output, _ = proc.communicate(timeout=BLOCK_SECONDS)
        except subprocess.TimeoutExpired:
            output = ""
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        if proc.returncode is None:
            proc.wait()
            pytest.fail(f"{where} ran past {BLOCK_SECONDS} s")
    assert proc.returncode == 0, f"{where} exited {proc.returncode}:\n{output}"
    assert "Traceback" not in output, f"{where} printed a traceback:\n{output}"
    return output


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_example_of_the_page_runs_and_prints_what_it_shows(page, tmp_path):
    for block in blocks(page):
        where = f"{page_id(page)}:{block.line}"
        if block.not_run is not None:
            assert len(block.not_run.split()) >= 4, f"{where}: say why it is not run"
            continue
        output = run_block(block, tmp_path, where)
        for expected in block.outputs:
            check_output(expected, output, where)
        for number in comment_numbers(block.code):  # a number said in a comment is checked
            assert find_whole(collapse(output), number, 0) >= 0, f"{where}: # ... {number}"


def test_the_blocks_not_run_are_few_and_say_why():
    """The exceptions are the install and test commands (CI runs them), a real model
    under lm-eval, the live Hugging Face Hub and a multi-node cluster."""
    skipped = [(page_id(page), block.line, block.not_run)
               for page in PAGES for block in blocks(page) if block.not_run]
    assert len(skipped) <= 8, skipped
    reasons = ("install", "test suite", "lm-eval", "Hugging Face Hub", "several machines")
    assert not [s for s in skipped if not any(word in s[2] for word in reasons)], skipped


def test_every_fence_of_every_page_is_read():
    """A block the parser missed would be skipped without a word (an indented one was)."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        fences = sum(1 for line in text.splitlines() if line.lstrip().startswith("```"))
        assert fences == 2 * len(list(FENCE.finditer(text))), page_id(page)


def test_the_examples_reach_the_shared_data_through_mdad_data():
    """Issue 38, defect 2: `--target-models ../shared/data/...` worked only from a clone
    beside the data. The pages name the shared data as "$MDAD_DATA"/..., and their
    examples run in a folder far from it (test above)."""
    code = [block.code for page in PAGES for block in blocks(page)]
    assert any('"$MDAD_DATA"/' in text for text in code)
    assert not [text for text in code if "../shared/data" in text]


def test_the_readmes_links_lead_to_files():
    """The README is read on its own (GitHub, PyPI): its relative links must exist."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    relative = [link for link in links if "://" not in link]
    assert relative
    assert not [link for link in relative if not (ROOT / link).exists()]
    assert len(text.splitlines()) < 150


def test_an_output_block_is_checked_against_the_run():
    """The checker itself: a shown line absent from the output, or out of order, fails."""
    actual = "a  1.0 [0.5, 2.0]\nwrapped\nline  here\nb 2"
    check_output("a 1.0 [0.5, 2.0]\n...\nwrapped line here\nb 2", actual, "x")
    for wrong in ("a 1.1", "b 2\na 1.0", "a 1", "0.5, 2", "b 2\nb 2"):
        with pytest.raises(AssertionError):
            check_output(wrong, actual, "x")


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    env = {**os.environ, "DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for page in ("reference/cli", "reference/api", "reference/methods"):
        assert (tmp_path / "site" / page / "index.html").stat().st_size > 10_000, page
    # every exported class and function is a heading of the API reference
    import importlib
    import inspect

    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    import pkgutil

    import mdad

    packages = ["mdad", *(info.name for info in pkgutil.walk_packages(mdad.__path__, "mdad.")
                          if info.ispkg and not info.name.startswith("mdad.cli")
                          and hasattr(importlib.import_module(info.name), "__all__"))]
    assert "mdad.study.backends" in packages
    missing = []
    for package in packages:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                anchor = f'<h3 id="{obj.__module__}.{obj.__qualname__}"'
                if anchor not in api:
                    missing.append(f"{package}.{name}")
    assert not missing, missing
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for command in ("mdad run", "mdad estimate", "mdad adaptive start", "mdad data list"):
        assert f"Usage: {command} " in cli, command
