"""One embedded database for every command, wherever it runs: the installed ``memory-bank``
started from different folders, as a user (or an MCP client) does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_bank.cli import serve as cli_serve
from memory_bank.settings import Settings
from memory_bank.store import open_database
from memory_bank.store.tokens import TokenStore

MEMORY_BANK = str(Path(sys.executable).with_name("memory-bank"))


class User:
    """A user's machine: a data directory and folders to run commands from."""

    def __init__(self, root: Path) -> None:
        self.data_home = root / "data"
        self.root = root

    @property
    def database(self) -> Path:
        return self.data_home / "memory-bank" / "memory-bank.db"

    def folder(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(exist_ok=True)
        return path

    def run(self, folder: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_BANK_")}
        return subprocess.run(
            [MEMORY_BANK, *args],
            cwd=self.folder(folder),
            env=clean | {"XDG_DATA_HOME": str(self.data_home), "COLUMNS": "200"} | env,
            stdin=subprocess.DEVNULL,  # `mcp` serves until its input closes
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


@pytest.fixture
def user(tmp_path: Path) -> User:
    return User(tmp_path)


def test_a_token_made_in_one_folder_is_listed_from_another_and_valid_for_the_default_database(user: User) -> None:
    made = user.run("projects", "token", "create", "--org", "acme", "--user", "ada", "--permissions", "memory:read")
    assert made.returncode == 0, made.stderr
    listed = user.run("elsewhere", "token", "list")
    assert listed.returncode == 0 and "acme" in listed.stdout
    assert TokenStore(open_database(Settings(database_url=f"sqlite:///{user.database}"))).verify(made.stdout.strip())
    assert not list(user.folder("projects").iterdir()) and not list(user.folder("elsewhere").iterdir())


def test_the_stdio_server_opens_the_same_database_and_leaves_no_file_where_it_is_spawned(user: User) -> None:
    token = user.run("home", "token", "create", "--org", "acme", "--user", "ada", "--permissions", "memory:read").stdout.strip()
    spawned = user.run("client", "mcp", MEMORY_BANK_MCP_ALLOW_STDIO="true", MEMORY_BANK_TOKEN=token)
    assert spawned.returncode == 0, spawned.stderr  # the token was valid: it is the same database
    assert list(user.folder("client").iterdir()) == []


def test_the_database_url_still_overrides_the_default(user: User, tmp_path: Path) -> None:
    chosen = tmp_path / "chosen.db"
    made = user.run("here", "token", "create", "--org", "a", "--user", "b", "--permissions", "memory:read",
                    MEMORY_BANK_DATABASE_URL=f"sqlite:///{chosen}")  # fmt: skip
    assert made.returncode == 0 and chosen.is_file() and not user.database.exists()


def test_serve_points_at_a_database_an_older_version_left_in_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After the default moved, a user who starts serve where the old file is learns how to keep it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMORY_BANK_DATABASE_URL", raising=False)
    (tmp_path / "memory-bank.db").write_bytes(b"")
    cli_serve.point_at_old_database(Settings())
    note = " ".join(capsys.readouterr().err.split())
    assert f"MEMORY_BANK_DATABASE_URL=sqlite:///{tmp_path / 'memory-bank.db'}" in note
    cli_serve.point_at_old_database(Settings(database_url=f"sqlite:///{tmp_path / 'memory-bank.db'}"))
    assert capsys.readouterr().err == ""  # it is the one in use
