"""A skill folder's files: listed by skills__load, read by skills__read, confined to the
folder; and discovery confined to its root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.skills.conftest import agent, context, write_skill
from thalos_bot.cli.cmd_skills import SkillsCommand, check_skills
from thalos_bot.config.skills import SkillsSettings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.skills.discovery import scan_roots
from thalos_bot.skills.resources import MAX_LISTED, MAX_RESOURCE_BYTES, list_files
from thalos_bot.skills.source import SkillsToolSource, no_file
from thalos_bot.skills.store import SkillStore
from thalos_bot.skills.sync import sync_skills
from thalos_bot.storage.database import Database
from thalos_bot.tools.types import ToolResult

READER = agent("pdf*", agent_id="reader")


async def call(
    source: SkillsToolSource, tool: str, who: AgentDefinition = READER, **arguments: Any
) -> ToolResult:
    return await source.call(tool, arguments, context(who))


def library(tmp_path: Path) -> Path:
    """``skills/pdf-forms`` with resources, a secret next to the root, and a link."""
    root = tmp_path / "skills"
    folder = write_skill(root, "pdf-forms", body="Run scripts/fill.py.\n").parent
    (folder / "scripts").mkdir()
    (folder / "scripts" / "fill.py").write_text("print('filled')\n")
    (folder / "references").mkdir()
    (folder / "references" / "FIELDS.md").write_text("# Fields\r\nname, date\r\n")
    (folder / "assets").mkdir()
    (folder / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (folder / ".env").write_text("TOKEN=hunter2\n")
    (folder / "big.txt").write_text("x" * (MAX_RESOURCE_BYTES + 1))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("the secret\n")
    # (a link out of the folder would make the whole skill refused: test_pinning.py)
    (folder / "fields-link.md").symlink_to(folder / "references" / "FIELDS.md")
    write_skill(root, "pdf-notes", form="file")
    return root


@pytest.fixture
async def source(tmp_path: Path, db: Database, store: SkillStore) -> SkillsToolSource:
    library(tmp_path)
    with capture_logs():
        await sync_skills(db, SkillsSettings(), tmp_path)
    return SkillsToolSource(store)


# --- skills__load lists the folder -------------------------------------------------------


@pytest.mark.anyio
async def test_load_lists_the_folder_and_its_files(
    source: SkillsToolSource, tmp_path: Path
) -> None:
    result = await call(source, "load", name="pdf-forms")
    folder = (tmp_path / "skills" / "pdf-forms").resolve()
    assert result.outcome == "ok"
    assert result.content.splitlines() == [
        '<skill name="pdf-forms">',
        "Run scripts/fill.py.",
        "<skill_resources>",
        f"Skill folder: {folder}",
        (
            "Paths in this skill are relative to that folder. Read a file with "
            'skills__read(name="pdf-forms", path="…"); scripts are never run.'
        ),
        "big.txt",
        "fields-link.md",
        "assets/logo.png",
        "references/FIELDS.md",
        "scripts/fill.py",
        "</skill_resources>",
        "</skill>",
    ]  # shallow files first; no SKILL.md, no .env, no link out of the folder


@pytest.mark.anyio
async def test_a_single_file_skill_has_no_resources(source: SkillsToolSource) -> None:
    result = await call(source, "load", name="pdf-notes")
    assert "skill_resources" not in result.content
    assert await call(source, "read", name="pdf-notes", path="x.md") == ToolResult(
        "There is no file 'x.md' in the skill 'pdf-notes'. The files it has are listed when "
        "you load it with skills__load.",
        "error",
    )


def test_the_listing_is_bounded_and_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    (folder / "data").mkdir(parents=True)
    for i in range(MAX_LISTED + 7):
        (folder / "data" / f"row-{i:03d}.csv").write_text("a,b\n")
    deep = folder / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    (deep / "too-deep.md").write_text("x")
    listing = list_files(folder.resolve())
    assert len(listing.files) == MAX_LISTED
    assert not listing.complete
    assert listing.more == 7
    assert "too-deep.md" not in " ".join(listing.files)


# --- skills__read ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_read_returns_one_text_file_wrapped(source: SkillsToolSource) -> None:
    result = await call(source, "read", name="pdf-forms", path="references/FIELDS.md")
    assert result == ToolResult(
        '<skill_file skill="pdf-forms" path="references/FIELDS.md">\n'
        "# Fields\nname, date\n</skill_file>"
    )
    script = await call(source, "read", name="pdf-forms", path="./scripts/fill.py")
    assert script.content.splitlines()[1] == "print('filled')"  # shown, never run


@pytest.mark.anyio
async def test_links_and_dots_inside_the_folder_are_followed(source: SkillsToolSource) -> None:
    linked = await call(source, "read", name="pdf-forms", path="fields-link.md")
    assert 'path="references/FIELDS.md"' in linked.content
    around = await call(source, "read", name="pdf-forms", path="scripts/../references/FIELDS.md")
    assert around.outcome == "ok"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "path",
    [
        "../../outside/secret.md",
        "references/leak.md",  # where a link out of the folder would be
        "scripts/../../pdf-notes.md",
        "{outside}/secret.md",  # absolute
        "{folder}/references/FIELDS.md",  # absolute, even inside
        ".env",
        "scripts/../.env",
        "references\\..\\..\\..\\outside\\secret.md",
        "nul\x00byte.md",
        "~/secret.md",
    ],
)
async def test_anything_outside_reads_exactly_like_a_missing_file(
    source: SkillsToolSource, tmp_path: Path, path: str
) -> None:
    path = path.format(
        outside=tmp_path / "outside", folder=(tmp_path / "skills" / "pdf-forms").resolve()
    )
    refused = await call(source, "read", name="pdf-forms", path=path)
    missing = await call(source, "read", name="pdf-forms", path="references/NOPE.md")
    assert missing == no_file("pdf-forms", "references/NOPE.md")
    assert refused == no_file("pdf-forms", path), path
    assert "the secret" not in refused.content
    assert "hunter2" not in refused.content


@pytest.mark.anyio
async def test_binary_large_and_folder_paths_are_refused_plainly(
    source: SkillsToolSource,
) -> None:
    binary = await call(source, "read", name="pdf-forms", path="assets/logo.png")
    assert binary == ToolResult(
        "'assets/logo.png' in the skill 'pdf-forms' is not a text file; skills__read returns "
        "UTF-8 text only.",
        "error",
    )
    large = await call(source, "read", name="pdf-forms", path="big.txt")
    assert large.content == (
        f"'big.txt' in the skill 'pdf-forms' is too large to read "
        f"({MAX_RESOURCE_BYTES + 1:,} bytes; at most {MAX_RESOURCE_BYTES:,})."
    )
    folder = await call(source, "read", name="pdf-forms", path="scripts")
    assert folder.content.startswith("'scripts' is a folder of the skill 'pdf-forms'")


@pytest.mark.anyio
async def test_read_is_scoped_to_the_agent_like_load(source: SkillsToolSource) -> None:
    outsider = agent("zzz*", agent_id="outsider")
    seen = await call(source, "read", outsider, name="pdf-forms", path="scripts/fill.py")
    never = await call(source, "read", outsider, name="nothing-here", path="scripts/fill.py")
    assert seen.content == never.content.replace("nothing-here", "pdf-forms")
    assert seen == await call(source, "load", outsider, name="pdf-forms")
    assert seen == ToolResult(
        "There is no skill named 'pdf-forms'. Use skills__search to find skills by topic.",
        "error",
    )
    assert (await call(source, "read", name="pdf-forms")).outcome == "error"  # no path


@pytest.mark.anyio
async def test_a_folder_swapped_for_a_link_after_the_sync_is_not_read(
    source: SkillsToolSource, tmp_path: Path
) -> None:
    folder = tmp_path / "skills" / "pdf-forms"
    folder.rename(tmp_path / "moved")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "scripts").mkdir(parents=True)
    (elsewhere / "scripts" / "fill.py").write_text("print('another')\n")
    folder.symlink_to(elsewhere)
    result = await call(source, "read", name="pdf-forms", path="scripts/fill.py")
    assert result.content.startswith("There is no file 'scripts/fill.py'")
    loaded = await call(source, "load", name="pdf-forms")
    assert "(no other files)" in loaded.content


# --- discovery stays inside its root --------------------------------------------------


def leaky_root(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "fine")
    outside = tmp_path / "outside"
    write_skill(outside, "secret", description="The secret.", form="file")
    write_skill(outside, "folder-out")
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "folder-out").symlink_to(outside / "folder-out")
    (root / "inner").mkdir()
    (root / "inner" / "SKILL.md").symlink_to(outside / "secret.md")
    return root


def test_entries_resolving_outside_the_root_are_skipped_and_reported(tmp_path: Path) -> None:
    root = leaky_root(tmp_path)
    scan = scan_roots([root])
    assert [s.name for s in scan.skills] == ["fine"]
    assert scan.errors == ()
    assert sorted(e.path.name for e in scan.outside) == ["SKILL.md", "folder-out", "leak.md"]
    (leak,) = [e for e in scan.outside if e.path.name == "leak.md"]
    assert str(leak) == (
        f"{root / 'leak.md'}: resolves outside its skills root "
        f"(to {(tmp_path / 'outside' / 'secret.md').resolve()}); skipped"
    )


@pytest.mark.anyio
async def test_a_leaked_skill_loaded_before_is_retired_and_logged(
    tmp_path: Path, db: Database, store: SkillStore
) -> None:
    root = tmp_path / "skills"
    write_skill(root, "leak", form="file", description="Was a link out.")
    with capture_logs():
        await sync_skills(db, SkillsSettings(), tmp_path)
    (root / "leak.md").unlink()
    write_skill(tmp_path / "outside", "leak", form="file", description="Was a link out.")
    (root / "leak.md").symlink_to(tmp_path / "outside" / "leak.md")
    with capture_logs() as logs:
        report = await sync_skills(db, SkillsSettings(), tmp_path)
    assert report.deactivated == ("leak",)
    assert [e for e in logs if e["event"] == "skill-outside-root"] == [
        {
            "event": "skill-outside-root",
            "log_level": "warning",
            "path": str(root / "leak.md"),
            "reason": (
                f"resolves outside its skills root "
                f"(to {(tmp_path / 'outside' / 'leak.md').resolve()}); skipped"
            ),
        }
    ]
    assert await store.loaded("leak") is None


def test_skills_check_reports_them_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leaky_root(tmp_path)
    command = SkillsCommand(SkillsSettings(), tmp_path, AgentCatalog([agent()]))
    assert check_skills(command) == 1
    out = capsys.readouterr().out
    assert "problems (3):" in out
    assert "  skills/leak.md: resolves outside its skills root" in out
    assert "  skills/inner/SKILL.md: resolves outside its skill folder" in out
