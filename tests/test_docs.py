"""The docs site and the README stay honest: links lead somewhere, the site builds
with --strict, and the reference pages say what the code does.

The commands the pages show are checked by tests/test_readme_commands.py.
"""

import functools
import importlib.util
import os
import re
import subprocess
import sys
import typing
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
# A Markdown link or image, [text](target "title"), and HTML src= / href=.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"""(?:src|href)=["']([^"']+)["']""")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
CODE = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1[ \t]*$|`[^`\n]+`", re.S | re.M)


FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")


def load_hook() -> ModuleType:
    """docs/hooks/reference.py, the module MkDocs loads as a hook."""
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = load_hook()


def local_targets(page: Path) -> list[str]:
    """The relative links and images of a page, outside code, without their #anchor."""
    text = CODE.sub("", page.read_text(encoding="utf-8"))
    found = LINK.findall(text) + HTML_LINK.findall(text) + REFERENCE_LINK.findall(text)
    targets = []
    for target in found:
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
            continue  # a URL, an anchor on the same page, or a site-absolute path
        targets.append(target.split("#", 1)[0].split("?", 1)[0])
    return [target for target in targets if target]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_and_image_leads_to_a_file(page: Path) -> None:
    missing = [t for t in local_targets(page) if not (page.parent / t).exists()]
    assert not missing, f"{page.relative_to(ROOT)} links to files that do not exist: {missing}"


def test_the_link_reader_finds_links_and_images_but_not_code_or_urls(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        'See [the guide](guide.md#setup), ![shot](shots/a.png "A") and <img src="b.svg">.\n'
        "[ref]: ../notes.md\n"
        "Not [a URL](https://example.com), [an anchor](#top), `[code](x.md)`.\n"
        "```markdown\n[in a block](y.md)\n```\n",
        encoding="utf-8",
    )
    assert sorted(local_targets(page)) == ["../notes.md", "b.svg", "guide.md", "shots/a.png"]


def unclosed_block(text: str) -> int | None:
    """The line of a code fence that no later fence closes, or None."""
    opened: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE_LINE.match(line)
        if match is None:
            continue
        fence, rest = match[1], match[2]
        if opened is None:
            opened = (number, fence)
        elif fence[0] == opened[1][0] and len(fence) >= len(opened[1]) and not rest.strip():
            opened = None
    return opened[0] if opened else None


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_code_block_is_closed(page: Path) -> None:
    # An unclosed fence turns the prose after it into a block (and its
    # commands into cases of test_readme_commands), and the block before it into prose.
    line = unclosed_block(page.read_text(encoding="utf-8"))
    assert line is None, f"{page.relative_to(ROOT)}:{line}: this code block never closes"


def test_a_fence_closes_only_with_its_own_kind_and_length() -> None:
    assert unclosed_block("````md\n```bash\nx\n```\n````\n") is None
    assert unclosed_block("```\na\n```\n\n```bash\nb\n") == 5
    assert unclosed_block("~~~\n```\n") == 1


def test_the_environment_page_describes_every_aah_variable_the_code_reads() -> None:
    read = set(HOOK.read_variables())
    described = {name for group in HOOK.described_variables().values() for name in group}
    assert read - described == set(), "describe these in docs/hooks/environment.yaml"
    assert described - read == set(), "aah reads none of these: remove them from the table"


@functools.cache
def variables_read() -> frozenset[str]:
    """The AAH_* variables aah reads, and the tests' own switches (AAH_POSTGRES_REQUIRED...)."""
    quoted = re.compile(r"[\"'](AAH_[A-Z0-9_]+)[\"']")
    by_tests = {
        name
        for path in (ROOT / "tests").rglob("*.py")
        for name in quoted.findall(path.read_text(encoding="utf-8"))
    }
    return frozenset(HOOK.read_variables()) | by_tests


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_aah_variable_a_page_names_is_one_the_code_reads(page: Path) -> None:
    known = variables_read()
    named = set(re.findall(r"\bAAH_[A-Z0-9_]*[A-Z0-9]\b", page.read_text(encoding="utf-8")))
    assert named <= known, (
        f"{page.relative_to(ROOT)} names variables nothing reads: {sorted(named - known)}"
    )


@functools.cache
def prompt_versions() -> dict[str, str]:
    """Every versioned prompt aah ships, by its name: ``{"asking": "asking/2", ...}``."""
    found = {}
    for path in (ROOT / "aah").rglob("prompts/*.md"):
        head = re.search(r"^version:\s*(\S+)$", path.read_text(encoding="utf-8"), re.M)
        if head:
            name = head.group(1).rsplit("/", 1)[0]
            found[name] = head.group(1)
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_prompt_version_a_page_names_is_the_one_aah_sends(page: Path) -> None:
    versions = prompt_versions()
    named = re.findall(r"`([a-z][a-z0-9-]*)/(\d+)`", page.read_text(encoding="utf-8"))
    stale = [
        f"{name}/{number}"
        for name, number in named
        if name in versions and versions[name] != f"{name}/{number}"
    ]
    assert not stale, f"{page.relative_to(ROOT)} names old prompt versions: {stale}"


def test_the_prompt_versions_are_read_from_the_prompt_files() -> None:
    versions = prompt_versions()
    assert versions["asking"].startswith("asking/") and versions["grader"].startswith("grader/")


def test_a_variable_read_by_name_is_found_and_one_only_mentioned_is_not(tmp_path: Path) -> None:
    package = tmp_path / "aah"
    (package / "web").mkdir(parents=True)
    (package / "web" / "knob.py").write_text(
        '"""Reads AAH_IN_A_DOCSTRING? No."""\nimport os\n'
        'KNOB = "AAH_NEW_KNOB"\nos.environ.get(KNOB)\nprint("set AAH_IN_A_MESSAGE")\n',
        encoding="utf-8",
    )
    read = HOOK.read_variables(package)
    assert read["AAH_NEW_KNOB"] == ["aah.web.knob"]
    assert read["AAH_MODEL"] == ["aah.config"]  # a Settings field
    assert not {"AAH_IN_A_DOCSTRING", "AAH_IN_A_MESSAGE"} & set(read)


def test_the_reference_pages_hold_their_markers_and_the_code_fills_them() -> None:
    from aah.events import Event
    from aah.store.schema import SCHEMA_VERSION, TABLES

    pages = {name: DOCS / "reference" / f"{name}.md" for name in HOOK.GENERATORS}
    pages["perf"] = DOCS / "contributing" / "testing.md"
    for name, page in pages.items():
        assert f"<!-- generated: {name} -->" in page.read_text(encoding="utf-8"), page
    cli = HOOK.cli_reference()
    for command in ("aah bench run", "aah db merge", "aah sessions export", "aah mcp serve"):
        assert f"## `{command}`" in cli
    assert "`--benchmark <str>`" in cli and "`--help`" in cli
    schema = HOOK.schema_reference()
    assert f"Schema version: **{SCHEMA_VERSION}**" in schema
    assert all(f"## `{table}`" in schema for table in TABLES)
    events = HOOK.events_reference()
    kinds = [m.model_fields["kind"].default for m in typing.get_args(typing.get_args(Event)[0])]
    assert all(f"## `{kind}`" in events for kind in kinds)
    perf = HOOK.perf_reference()
    assert all(f"`perf/{p.name}`" in perf for p in (ROOT / "perf").glob("*.py"))
    environment = HOOK.environment_reference()
    assert (
        "| `AAH_WEB_TOKEN` |" in environment and "| `AAH_DB` | `sessions/aah.db` |" in environment
    )


def test_the_site_builds_with_strict(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        if os.environ.get("AAH_DOCS_REQUIRED") == "1":
            pytest.fail("AAH_DOCS_REQUIRED=1 but mkdocs is missing: pip install -e '.[docs]'")
        pytest.skip("the docs extra is not installed (pip install -e '.[docs]')")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        text=True,
        capture_output=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


def test_help_and_docstrings_show_as_written_their_code_spans_as_code() -> None:
    shown = HOOK.text("A name (``<tool>__<endpoint>``), not <b>bold</b> * or a | cell")
    assert shown == r"A name (`<tool>__<endpoint>`), not &lt;b&gt;bold&lt;/b&gt; \* or a \| cell"
