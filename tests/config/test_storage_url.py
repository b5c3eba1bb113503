"""``[storage] url``: SQLite stays the default, PostgreSQL is selected by its URL, a
password in the file is refused, and the daemon refuses PostgreSQL until every port
it uses has a PostgreSQL store."""

from __future__ import annotations

from pathlib import Path

import pytest

from thalos_bot.cli.main import main
from thalos_bot.config.loader import ConfigError, load_settings

SECRET = "hunter2-not-a-real-one"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_settings(_write(tmp_path, text))
    return caught.value.problems


def test_without_a_url_the_sqlite_file_in_the_state_dir_is_used(tmp_path: Path) -> None:
    loaded = load_settings(_write(tmp_path, 'state_dir = "data"\n'))
    assert loaded.settings.storage.target.kind == "sqlite"
    assert loaded.database_path == (tmp_path / "data" / "thalos.db").resolve()


def test_a_sqlite_url_names_the_file(tmp_path: Path) -> None:
    file = tmp_path / "elsewhere" / "bot.db"
    loaded = load_settings(_write(tmp_path, f'[storage]\nurl = "sqlite://{file}"\n'))
    assert loaded.database_path == file


@pytest.mark.parametrize(
    "url",
    [
        "mysql://bot@db/thalos",
        "sqlite://relative.db",
        "sqlite:///",
        "postgresql://bot@db:notaport/thalos",
    ],
)
def test_an_unusable_url_is_an_error_naming_the_key(tmp_path: Path, url: str) -> None:
    (problem,) = _problems(tmp_path, f'[storage]\nurl = "{url}"\n')
    assert problem == (
        "bot.toml: storage.url: must be postgresql://user@host:port/database or "
        "sqlite:///absolute/path/to/file.db"
    )


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://bot:{SECRET}@db.internal:5432/thalos",
        f"postgres://bot@db.internal/thalos?password={SECRET}",
    ],
)
def test_a_password_in_the_file_is_refused_without_repeating_it(tmp_path: Path, url: str) -> None:
    (problem,) = _problems(tmp_path, f'[storage]\nurl = "{url}"\n')
    assert problem.startswith("bot.toml: storage.url: a password does not belong in the file")
    assert "THALOS_DATABASE_PASSWORD" in problem
    assert SECRET not in problem


def test_a_postgresql_url_is_accepted_by_the_file(tmp_path: Path) -> None:
    url = "postgresql://bot@db.internal:5432/thalos"
    loaded = load_settings(_write(tmp_path, f'[storage]\nurl = "{url}"\npool_size = 4\n'))
    target = loaded.settings.storage.target
    assert (target.kind, target.url) == ("postgresql", url)
    assert loaded.settings.storage.pool_size == 4


def test_chat_says_which_postgresql_it_cannot_reach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, '[storage]\nurl = "postgresql://bot@127.0.0.1:1/thalos"\n')
    assert main(["chat", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: database postgresql://bot@127.0.0.1:1/thalos: cannot connect")
    assert "Traceback" not in err
    # No SQLite file appeared instead: the daemon never falls back to one.
    assert not list(tmp_path.rglob("thalos.db"))


def test_db_copy_from_a_postgresql_configuration_asks_for_the_sqlite_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, '[storage]\nurl = "postgresql://bot@127.0.0.1:1/thalos"\n')
    assert main(["db", "copy", "--to", "postgresql://bot@127.0.0.1:1/x", "-c", str(path)]) == 2
    assert "storage.url already names PostgreSQL; name the SQLite file" in capsys.readouterr().err
    assert not list(tmp_path.rglob("thalos.db"))


def test_check_names_the_shared_store_without_reaching_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, '[storage]\nurl = "postgresql://bot@127.0.0.1:1/thalos"\n')
    assert main(["check", "--config", str(path)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("state: ")]
    assert line.startswith("state: postgresql://bot@127.0.0.1:1/thalos (shared), ")
    assert line.endswith("local.sqlite3 (this machine's own)")


def test_db_copy_says_a_password_on_the_command_line_is_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "")
    secret = "pw-" + "x" * 8
    assert (
        main(["db", "copy", "--to", f"postgresql://bot:{secret}@127.0.0.1:1/x", "-c", str(path)])
        == 2
    )
    err = capsys.readouterr().err
    assert "a password does not belong on the command line" in err
    assert "in the file" not in err
    assert secret not in err
