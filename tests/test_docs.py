"""README.md and docs/: the quickstart is what CI runs, links resolve, documented flags exist, documented defaults
are the configs'.

The two quickstart commands must stay verbatim (.ci/run runs them); every relative link (and #anchor) in the
front page, the manual and benchmarks/README.md must point at something; every option in a documented
`edgebert VERB ...` command or in the first column of a verb page's option table must be one of that verb's; and
every value in the "default" column of an option table (verb pages: `--flag` rows; recipe.md: `key` rows under a
`[section]` heading) must be that option's default in edgebert/config.py (or the recipe section's dataclass).
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from edgebert import config
from edgebert.cli import COMMANDS, build_parser
from edgebert.pipeline import recipe as recipes

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


# ---------------------------------------------------------------------------------------- documented defaults

VERB_CONFIGS = {"distill": config.DistillConfig, "compress": config.CompressConfig, "finetune": config.FinetuneConfig,
                "export": config.ExportConfig, "bench": config.BenchConfig, "pipeline": config.PipelineConfig}  # fmt: skip
CELL = re.compile(r"(?<!\\)\|")  # a table cell border (not an escaped \| inside a cell)


def _default_rows(text: str) -> list[tuple[str, str, str]]:
    """(heading, first cell, default cell) of every row of every table whose header has a "default" column."""
    rows, heading, column = [], "", None
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if not line.startswith("|"):
            column = None
            continue
        cells = [c.strip() for c in CELL.split(line.strip())[1:-1]]
        if column is None:  # the header row
            column = cells.index("default") if "default" in cells else -1
        elif column >= 0 and not set(cells[0]) <= set("-: "):
            rows.append((heading, cells[0], cells[column]))
    return rows


def _documented(cell: str, count: int) -> list[Any]:
    """The `count` values of a default cell: parentheses dropped, `a, b` (or `a; b`) split when the row names
    several options; each a TOML literal, on/off, or else the words as written."""
    text = re.sub(r"\s*\([^)]*\)", "", cell).replace("`", "").strip()
    pieces = [text] if count == 1 else re.split(r"[,;]\s+", text)
    assert len(pieces) == count, f"default cell {cell!r} does not hold one value for each of its {count} options"
    values: list[Any] = []
    for piece in pieces:
        if piece in ("on", "off"):
            values.append(piece == "on")
            continue
        try:
            values.append(tomllib.loads(f"v = {piece}")["v"])
        except tomllib.TOMLDecodeError:
            values.append(piece)
    return values


def _agrees(value: Any, default: Any, help_text: str) -> bool:
    """Whether a documented value is the default: equal to it; for a None default (decided at run time) any words
    describing it, or a number its help text names as the default."""
    if default is None:
        return isinstance(value, str) or re.search(rf"default:? {re.escape(str(value))}\b", help_text) is not None
    if isinstance(default, bool) or isinstance(value, bool):
        return value is default
    return value == default


def _flag_defaults(verb: str) -> dict[str, tuple[Any, str]]:
    """flag -> (default, help): the verb config's field for flags it declares, else the parser's own default
    (the healing and vocabulary flags read HealConfig / VocabConfig; test_config checks those agree)."""
    fields = {f.name: f for f in dataclasses.fields(VERB_CONFIGS[verb])}
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    found = {}
    for action in sub.choices[verb]._actions:
        field = fields.get(action.dest)
        if field is not None and field.metadata.get("cli"):
            found.update({s: (_field_default(field), field.metadata["help"]) for s in action.option_strings})
        elif action.dest in ("target", "model", "out", "help"):
            continue  # arguments of the command, not options with a config default
        else:
            found.update({s: (action.default, action.help or "") for s in action.option_strings})
    return found


def _recipe_defaults(heading: str) -> dict[str, tuple[Any, str]]:
    """key -> (default, "") of the recipe section a recipe.md heading names (`[distill]`; "Top level")."""
    section = re.search(r"\[(\w+)\]", heading)
    cls = recipes.SECTIONS[section.group(1)] if section else recipes.Recipe if heading == "Top level" else None
    if cls is None:
        return {}
    return {f.name: (_field_default(f), "") for f in dataclasses.fields(cls)}


def _field_default(f: dataclasses.Field[Any]) -> Any:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


@pytest.mark.parametrize("page", [*VERB_CONFIGS, "recipe"])
def test_documented_defaults_are_the_configs(page: str) -> None:
    text = (DOCS / f"{page}.md").read_text()
    checked, wrong = 0, []
    for heading, first, cell in _default_rows(text):
        if page == "recipe":
            known, names = _recipe_defaults(heading), re.findall(r"`(\w+)`", first)
        else:
            known, names = _flag_defaults(page), FLAG.findall(first)
        names = [n for n in names if n in known]
        if not names:
            continue
        for name, value in zip(names, _documented(cell, len(names))):
            default, help_text = known[name]
            checked += 1
            if not _agrees(value, default, help_text):
                wrong.append(f"{name}: documented {cell!r}, the config says {default!r}")
    assert not wrong, f"docs/{page}.md: " + "; ".join(wrong)
    tables = bool(_default_rows(text))
    assert checked or not tables, f"docs/{page}.md has option tables with a default column but no row was checked"


# ---------------------------------------------------------------------------------------- no build history

# The product speaks of what is and what was measured (version, command, CPU), never of the sitting it was
# done in: no "session" with its number, and no result folder named by sitting (a name ending in "-s" and two
# digits). History lives in git.
HISTORY = [re.compile(r"\bsessions? \d+\b", re.I), re.compile(r"-s\d\d\b")]


def _history_hits(text: str) -> list[str]:
    return [m.group(0) for pattern in HISTORY for m in pattern.finditer(text)]


@pytest.mark.parametrize(
    ("line", "hits"),
    [("Session {13} end to end: 97.6 %", ["Session {13}"]), ("measured in sessions {15}-17", ["sessions {15}"]),
     ("results/preset-small-s{15}/report.md", ["-s{15}"]), ("see buckets-student-s{17}.", ["-s{17}"]),
     ("an onnxruntime session 2x faster", []), ("the default session options", []), ("--seq-len 16", []),
     ("results/preset-small/", []), ("-s1 and -s123 are not sittings", [])],
)  # fmt: skip
def test_history_patterns(line: str, hits: list[str]) -> None:
    """Braces keep this file's own examples from matching; they are dropped before the patterns run."""
    bare = lambda text: text.replace("{", "").replace("}", "")  # noqa: E731
    assert _history_hits(bare(line)) == [bare(hit) for hit in hits]


def test_no_tracked_text_names_a_session() -> None:
    found = [f"{name}:{number}: {line.strip()[:100]}" for name, text in _tracked_text()
             for number, line in enumerate(text.splitlines(), 1) if _history_hits(line)]  # fmt: skip
    assert not found, "tracked text names a session or a result folder by sitting:\n" + "\n".join(found)


ISSUE = re.compile(r"\bissues? #?\d+\b", re.I)  # what a change was for lives in git and the tracker, not in the text
# A bare "#12" too, in the files written as prose or code; the others (.tsx, .html, .css) spell colours that way.
ISSUE_NUMBER = re.compile(r"(?<![\w#&/])#\d+\b")
ISSUE_NUMBER_SUFFIXES = (".md", ".toml", ".sh", ".py", ".txt", ".mjs", ".json")


def _issue_hits(name: str, line: str) -> bool:
    return bool(ISSUE.search(line) or (name.endswith(ISSUE_NUMBER_SUFFIXES) and ISSUE_NUMBER.search(line)))


@pytest.mark.parametrize(
    ("name", "line", "hit"),
    [("a.md", "fixed (issue {4})", True), ("a.py", "# issues {12} and 13", True), ("a.sh", "# see {#12}", True),
     ("a.md", "as asked in ({#7})", True), ("a.tsx", "color: '#666'", False), ("a.md", "[x](#the-small-preset)", False),
     ("a.py", '{"w", "##7"}', False), ("a.md", "the issue is open", False)],
)  # fmt: skip
def test_issue_patterns(name: str, line: str, hit: bool) -> None:
    """Braces keep this file's own examples from matching; they are dropped before the patterns run."""
    assert _issue_hits(name, line.replace("{", "").replace("}", "")) is hit


def _tracked_text(*pathspecs: str) -> list[tuple[str, str]]:
    """(name, text) of each tracked UTF-8 text file under `pathspecs` (all when none), node_modules left out."""
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z", "--", *pathspecs], cwd=ROOT, capture_output=True, check=True).stdout
    files = []
    for name in listed.decode().split("\0"):
        path = ROOT / name
        if not name or "node_modules/" in name or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        try:
            files.append((name, data.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return files


def test_no_tracked_text_names_an_issue() -> None:
    """Code, docs, presets, benchmarks and tests say what they do, not which issue asked for it."""
    found = [f"{name}:{number}: {line.strip()[:100]}" for name, text in _tracked_text() if name != "tests/test_docs.py"
             for number, line in enumerate(text.splitlines(), 1) if _issue_hits(name, line)]  # fmt: skip
    assert not found, "tracked text names an issue:\n" + "\n".join(found)


# A path of the machine a run was on (its scratch, checkout or home directories): absolute, so not `$WORK/tmp/` or
# `small.work/`. Shipped and committed text names what a reader has instead: repository paths, ../shared/data, and
# placeholders (WORK, OUT, RUNS, $EDGEBERT_MPNET).
MACHINE_PATH = re.compile(r"(?<![\w.$})/])/(?:tmp|work|root|home)/")
# (file, line text) where such a path is itself the documented example; prefer rewriting the text to adding here.
MACHINE_PATH_EXAMPLES: set[tuple[str, str]] = set()


@pytest.mark.parametrize(
    ("line", "hit"),
    [("--work {/tmp/}bench-work", True), ('"path": "{/work/}bench/x"', True), ("cd {/root/}x", True),
     ("DEST=${DEST:-{/tmp/}mpnet}", True),
     ("--out WORK/s15/report", False), ("$A/small.work/heal/student", False), ("../shared/data/stsb", False),
     ('"HOME": os.environ.get("HOME", "/tmp")', False), ("$W/work/none", False)],
)  # fmt: skip
def test_machine_path_pattern(line: str, hit: bool) -> None:
    """Braces keep this file's own examples from matching; they are dropped before the pattern runs."""
    assert bool(MACHINE_PATH.search(line.replace("{", "").replace("}", ""))) is hit


def test_no_shipped_text_names_a_machine_path() -> None:
    """README.md, docs/, edgebert/ (code, comments, presets) and benchmarks/ (scripts, commands.sh, the committed
    reports' markdown and JSON) name no directory of the machine they were written or run on."""
    found = [f"{name}:{number}: {line.strip()[:100]}"
             for name, text in _tracked_text("README.md", "docs", "edgebert", "benchmarks")
             for number, line in enumerate(text.splitlines(), 1)
             if MACHINE_PATH.search(line) and (name, line.strip()) not in MACHINE_PATH_EXAMPLES]  # fmt: skip
    assert not found, "tracked text names a machine path (use WORK, OUT or ../shared/data):\n" + "\n".join(found)


DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def _prose_files() -> list[str]:
    """The text people read as the project's word: docs, READMEs, presets, benchmark recipes and scripts. A run's own
    record (a report bench or pipeline wrote) keeps its timestamp."""
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    kept = []
    for name in listed.decode().split("\0"):
        generated = name.startswith("benchmarks/results/") and name.rsplit("/", 1)[-1] in {"report.md", "table.md"}
        if name.endswith((".md", ".toml", ".sh")) and "node_modules/" not in name and not generated:
            kept.append(name)
    return kept


def test_no_prose_says_when_it_was_measured() -> None:
    """Measurements name their version, command and CPU; the day is git's to keep."""
    found = [f"{name}:{number}: {line.strip()[:100]}" for name in _prose_files()
             for number, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), 1)
             if DATE.search(line)]  # fmt: skip
    assert not found, "tracked prose dates a measurement:\n" + "\n".join(found)


def test_the_families_table_is_families_py() -> None:
    """docs/export.md's Families table names every family with exactly the verbs `Family.verbs` grants it."""
    from edgebert.families import FAMILIES

    text = (DOCS / "export.md").read_text()
    rows = {}
    for line in text.split("## Families", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].startswith("`") and cells[1] != "`model_type`":
            rows[cells[1].strip("`")] = {v.strip() for v in cells[2].split(",")}
    assert rows == {t: set(f.verbs) for f in FAMILIES for t in f.model_types}
