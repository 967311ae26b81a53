"""The documentation's invariants: no machine's paths, a short README, links that resolve, and a
generated agents reference in sync with the code.

Run alone with ``python -m pytest -q tests/test_docs.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()

#: Absolute paths of a development machine: a home directory (Linux, macOS, Windows), root's home,
#: the work and mount trees of the machines this project was developed on.
MACHINE_PATH = re.compile(
    r"(?<![\w.~-])(?:/home/|/root/|/Users/|/work/|/mnt/|[A-Za-z]:\\{1,2}Users\\{1,2})"
)
#: A scratch file under ``/tmp``: allowed in tests (created and removed at run time), not elsewhere.
TMP_PATH = re.compile(r"(?<![\w.~-])/tmp/[A-Za-z]")


def _tracked_text_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = []
    for name in out.decode().split("\0"):
        if not name or name == THIS:
            continue
        path = ROOT / name
        if not path.is_file():
            continue
        head = path.read_bytes()[:8192]
        if b"\0" in head:  # binary (nets, images, npz)
            continue
        files.append(path)
    return files


def test_no_tracked_file_names_a_path_of_a_development_machine():
    """No tracked text file contains an absolute path of a development machine.

    The rule: never write a path of your machine into the repository. Forbidden anywhere are
    ``/home/``, ``/root/``, ``/Users/``, ``/work/``, ``/mnt/`` and ``C:\\Users\\``; ``/tmp/NAME`` is
    forbidden outside ``tests/`` (a test may create and remove scratch files there at run time).
    Write paths relative to the repository root (``runs/NAME``, ``data/heldout-expert``), or a
    placeholder (``RUN_DIR``, ``NET``). ``~/.cache/...`` (a per-user default) is allowed. Binary files
    and this file are not checked."""
    found = []
    for path in _tracked_text_files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if MACHINE_PATH.search(line) or (not rel.startswith("tests/") and TMP_PATH.search(line)):
                found.append(f"{rel}:{number}: {line.strip()[:120]}")
    assert not found, "paths of a development machine:\n" + "\n".join(found[:50])


def test_no_shipped_net_names_a_path_of_a_development_machine():
    """The same rule for the metadata of the tracked nets (their training summaries name the runs and
    shards they came from: relative paths only)."""
    from nets.io import read_metadata

    found = []
    for path in sorted(ROOT.glob("models/*/*.safetensors")):
        for key, value in read_metadata(path).items():
            if MACHINE_PATH.search(str(value)):
                found.append(f"{path.relative_to(ROOT).as_posix()}: {key}: {MACHINE_PATH.search(str(value)).group(0)}")
    assert not found, "paths of a development machine in net metadata:\n" + "\n".join(found)


def test_readme_is_an_index_of_at_most_300_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move the detail to docs/"


def test_readme_keeps_the_ci_test_command():
    """``.ci/run`` runs the README's first line matching ``^pip install .*pytest``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if re.match(r"^pip install .*pytest", line)]
    assert lines and lines[0] == 'pip install -c constraints-cpu.txt -e ".[test,ray]" && python -m pytest -q -n auto --dist worksteal'


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but ``-`` and ``_`` dropped, spaces to ``-``."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match and not in_code:
            slug = _slug(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
        anchors.update(re.findall(r'<a (?:name|id)="([^"]+)"', line))
    return anchors


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md")),
            ROOT / "docs" / "experiments" / "README.md"]


def test_every_relative_link_of_the_docs_resolves():
    """Every relative link in README.md, CHANGELOG.md and docs/*.md names an existing file, and
    every anchor (``file.md#heading``) a heading of that file."""
    broken = []
    for doc in _doc_files():
        if not doc.is_file():
            continue
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
        for match in LINK.finditer(text):
            target = match.group(1) or match.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (doc.parent / file_part).resolve() if file_part else doc
            rel = doc.relative_to(ROOT).as_posix()
            if not dest.exists():
                broken.append(f"{rel}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{rel}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_anchor_of_a_heading_is_githubs():
    assert _slug("Strength: `jfa` against the expert (96.0%)") == "strength-jfa-against-the-expert-960"
    assert _slug("Table 3, WU-UCT vs serial") == "table-3-wu-uct-vs-serial"


def test_docs_agents_md_is_in_sync_with_the_code():
    """docs/agents.md is the output of ``python cli.py agents --markdown``; regenerate it with
    ``python cli.py agents --markdown > docs/agents.md``."""
    out = subprocess.run([sys.executable, "cli.py", "agents", "--markdown"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    current = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    assert out.stdout == current, "docs/agents.md is stale: python cli.py agents --markdown > docs/agents.md"


def test_agents_markdown_renders_a_section_and_an_options_table_per_agent():
    import catalog

    entries = [{"name": "demo", "summary": "A demo | agent.", "options": [
        {"name": "mode", "type": "a|b", "range": "", "default": "a", "description": "which one"},
        {"name": "sims", "type": "int", "range": "[1, 10]", "default": "4", "description": "simulations"}]},
        {"name": "bare", "summary": "No options here.", "options": []}]
    text = catalog.agents_markdown(entries)
    assert "## `demo`" in text and "A demo \\| agent." in text
    assert "| `mode` | a\\|b |  | `a` | which one |" in text
    assert "| `sims` | int | `[1, 10]` | `4` | simulations |" in text
    assert "## `bare`" in text and "No options." in text
    assert text.endswith("\n") and not text.endswith("\n\n")
