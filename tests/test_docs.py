"""The documentation: the README stays short, every page is in the site's navigation,
links from the README reach a page and a heading, the shell blocks marked runnable run,
the CLI reference is generated from the command line, and the site builds with
``mkdocs build --strict`` where MkDocs is installed (the ``docs`` extra; CI has it)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKER = "<!-- runnable -->"
README_LIMIT = 10 * 1024


def pages() -> list[Path]:
    """Every Markdown page of the site."""
    return sorted(path for path in DOCS.rglob("*.md") if "hooks" not in path.parts)


def runnable_blocks() -> list[tuple[str, str]]:
    """(where, code) of each ```bash block right after the runnable marker."""
    found = []
    for path in [README, *pages()]:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if line.strip() != MARKER:
                continue
            where = f"{path.relative_to(ROOT)}:{number + 1}"
            assert number + 1 < len(lines) and lines[number + 1].strip() == "```bash", (
                f"{where}: the runnable marker must stand right before a ```bash block")
            end = lines.index("```", number + 2)
            found.append((where, "\n".join(lines[number + 2:end]) + "\n"))
    return found


BLOCKS = runnable_blocks()


def test_the_readme_is_under_10_kb() -> None:
    size = README.stat().st_size
    print(f"README.md: {size} bytes (limit {README_LIMIT})")
    assert size < README_LIMIT


def test_some_blocks_are_marked_runnable() -> None:
    assert BLOCKS, f"no block marked {MARKER!r}: the docs' examples would go unchecked"


@pytest.mark.parametrize("block", [code for _, code in BLOCKS],
                         ids=[where for where, _ in BLOCKS])
def test_a_runnable_block_runs(block: str, tmp_path: Path) -> None:
    """Each marked block runs with bash in an empty folder, the interpreter's commands
    (the project's virtualenv) first on PATH, and stops at its first failing command."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, f"{block}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"


def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav names (read as text: PyYAML comes with MkDocs only)."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = config.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)\s*$", nav, re.M)


def test_every_page_is_in_the_navigation_once() -> None:
    named = nav_pages()
    assert len(named) == len(set(named)), "a page is named twice in the nav"
    assert sorted(named) == sorted(str(path.relative_to(DOCS)) for path in pages())
    assert "threat-model.md" in named and "cli.md" in named


def github_anchor(heading: str) -> str:
    """The anchor GitHub (and the site's table of contents) gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_readmes_links_reach_a_page_and_a_heading() -> None:
    links = re.findall(r"\]\((docs/[^)#]+)(?:#([^)]+))?\)", README.read_text(encoding="utf-8"))
    assert len(links) >= 20
    for target, anchor in links:
        page = ROOT / target
        assert page.is_file(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)
            assert anchor in {github_anchor(heading) for heading in headings}, (target, anchor)


def load_hook():
    spec = importlib.util.spec_from_file_location("cli_reference",
                                                  DOCS / "hooks" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_made_from_the_command_line() -> None:
    hook = load_hook()
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert page == hook.with_reference(page), (
        "docs/cli.md differs from what the commands declare: run "
        "`.venv/bin/python docs/hooks/cli_reference.py`")
    assert hook.on_page_markdown(page, None, None, None) == page
    for command in ("build", "run", "show", "score", "report", "harvest", "export",
                    "generate-programs", "serve-rewards", "ls", "doctor"):
        assert f"\n## `execbench {command}`\n" in page, command
    run_section = page.split("## `execbench run`", 1)[1].split("\n## ", 1)[0]
    assert "Usage: execbench run [OPTIONS]" in run_section
    assert "- `--suite <path>`: Suite folder made by `execbench build`. \\[required\\]" in (
        run_section)
    assert hook.cli_reference() == hook.cli_reference()
    assert hook.on_page_markdown("# Other page\n", None, None, None) == "# Other page\n"
    stale = page.replace("Usage: execbench run [OPTIONS]", "Usage: old")
    assert hook.on_page_markdown(stale, None, None, None) == page


def test_help_text_is_escaped_outside_code_spans() -> None:
    hook = load_hook()
    assert hook._text("a *b* <c> `d *e* <f>` g_h") == "a \\*b\\* &lt;c&gt; `d *e* <f>` g\\_h"
    assert hook._text("one ` tick <x>") == "one \\` tick &lt;x&gt;"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None
                    or importlib.util.find_spec("material") is None,
                    reason="MkDocs with Material is not installed: pip install -e '.[docs]' "
                           "builds the site (CI does)")
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site), "--config-file", str(ROOT / "mkdocs.yml")],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "execbench serve-rewards" in cli and "--model-base-url" in cli
    assert not (site / "hooks").exists()
