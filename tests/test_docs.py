"""README.md and docs/: the quickstart is what CI runs, links resolve, and documented flags exist.

The two quickstart commands must stay verbatim (.ci/run runs them); every relative link (and #anchor) in the
front page, the manual and benchmarks/README.md must point at something; every option in a documented
`edgebert VERB ...` command or in the first column of a verb page's option table must be one of that verb's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from edgebert.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted(DOCS.glob("*.md"))]
VERBS = [command.name for command in COMMANDS]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _code_lines(text: str) -> list[str]:
    """The lines inside fenced code blocks."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside:
            lines.append(line)
    return lines


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _verb_options(verb: str) -> set[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return {s for action in sub.choices[verb]._actions for s in action.option_strings}


def _commands(text: str, verb: str) -> list[str]:
    """Each documented `edgebert VERB ...` command, continuation lines joined."""
    commands, current = [], None
    for line in _code_lines(text):
        if current is not None:
            current += " " + line
        elif re.match(rf"\s*(\.venv/bin/)?edgebert {verb}\b", line):
            current = line
        if current is not None and not line.rstrip().endswith("\\"):
            commands.append(current.split("#")[0])
            current = None
    return commands


def test_readme_quickstart_is_what_ci_runs() -> None:
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith(("./", ".venv/"))]
    readme = _code_lines((ROOT / "README.md").read_text())
    assert ci == ["./install.sh && .venv/bin/edgebert export --target tfjs", ".venv/bin/python -m pytest"]
    assert all(command in readme for command in ci), "the README's quickstart must hold .ci/run's commands verbatim"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = page.read_text()
    for target, anchor in re.findall(r"\]\((?!https?:)([^)#\s]*)(?:#([^)\s]+))?\)", text):
        path = (page.parent / target).resolve() if target else page
        assert path.exists(), f"{page.name}: link to missing {target}"
        if anchor and path.suffix == ".md":
            slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", path.read_text(), flags=re.M)}
            assert anchor in slugs, f"{page.name}: no heading #{anchor} in {target or page.name}"


@pytest.mark.parametrize("verb", VERBS)
def test_documented_options_exist(verb: str) -> None:
    options = _verb_options(verb)
    page = (DOCS / f"{verb}.md").read_text()
    documented = {flag for command in _commands(page, verb) for flag in FLAG.findall(command)}
    documented |= {flag for row in re.findall(r"^\| ([^|]+) \|", page, flags=re.M) for flag in FLAG.findall(row)}
    for other in (ROOT / "README.md").read_text(), *(p.read_text() for p in DOCS.glob("*.md")):
        documented |= {flag for command in _commands(other, verb) for flag in FLAG.findall(command)}
    assert documented, f"docs/{verb}.md documents no option"
    assert documented <= options, f"not options of `edgebert {verb}`: {sorted(documented - options)}"
