"""A command whose output has nowhere to go: its reader quit (``| head``, an MCP client gone), or stdout
was closed before it started. It ends at once and quietly, never told as a file error or a traceback.

The installed command is run as a shell or a client runs it: the broken pipe is a real one.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess

import pytest
from typer.testing import CliRunner

from memory_bank.cli import app
from memory_bank.cli import agents as agent_commands
from memory_bank.cli.console import READER_GONE
from memory_bank.settings import Settings, get_settings
from memory_bank.store.database import open_database, transaction
from memory_bank.store.tables import AgentRow
from support.mcp_live import MEMORY_BANK

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def test_a_list_whose_reader_quits_early_ends_quietly_with_128_plus_sigpipe(stdio_env: dict[str, str]) -> None:
    """``memory-bank agent list | head -c 10``: said "error (invalid_params): file: Broken pipe"."""
    engine = open_database(Settings(database_url=stdio_env["MEMORY_BANK_DATABASE_URL"]))
    with transaction(engine, write=True) as session:  # ~250 kB: more than a pipe holds
        session.add_all(AgentRow(org_id="acme", id=f"agent-{n:04}", name="n" * 100) for n in range(2000))
    engine.dispose()
    env = {**os.environ, **stdio_env}
    process = subprocess.Popen([MEMORY_BANK, "agent", "list", "--org", "acme"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    assert len(process.stdout.read(10)) == 10
    process.stdout.close()
    assert process.wait(timeout=60) == READER_GONE == 141
    assert process.stderr.read() == b""


@pytest.mark.parametrize("command", [["token", "list"], ["agent", "list", "--org", "acme"]])
def test_a_command_printing_through_rich_ends_as_quietly_as_one_printing_plainly(
    stdio_env: dict[str, str], command: list[str]
) -> None:
    """``token list`` prints its table with rich, whose broken pipe raised ``SystemExit(1)`` past
    ``plain_errors``: 1, where ``agent list`` (plain text) ended 141. The reader is gone before the
    command starts, so the first write fails however little it writes."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run([MEMORY_BANK, *command], env={**os.environ, **stdio_env}, stdout=writer, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (READER_GONE, b"")


def test_mcp_ends_quietly_when_its_client_goes_away(stdio_env: dict[str, str]) -> None:
    """The client sends a request and quits, which closes both pipes: the reply's write fails inside
    the SDK's task group, a traceback of nested exception groups before. (While stdin stays open
    the server waits on it: the SDK's reader thread cannot be cancelled.)"""
    env = {**os.environ, **stdio_env}
    process = subprocess.Popen([MEMORY_BANK, "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    process.stdout.close()
    process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    process.stdin.close()
    try:
        assert process.wait(timeout=60) == READER_GONE
    finally:
        process.kill()
    said = process.stderr.read().decode()
    assert "Traceback" not in said and "Broken pipe" not in said and "error (" not in said, said


@pytest.mark.parametrize("closed", [">&-", "<&-"])
def test_mcp_started_with_stdout_or_stdin_closed_says_so(stdio_env: dict[str, str], closed: str) -> None:
    """Closed, stdout is None in Python (an AttributeError's traceback), and a closed fd 0 could be
    handed to the database file that the transport then took for the client's input."""
    env = {**os.environ, **stdio_env, "MEMORY_BANK": MEMORY_BANK}
    done = subprocess.run(["sh", "-c", f'exec "$MEMORY_BANK" mcp {closed}'], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert " ".join(done.stderr.split()) == (
        "memory-bank mcp: stdin or stdout is closed: the client's messages come on stdin and the replies go to stdout"
    )


def test_an_input_or_output_error_that_names_no_file_is_not_told_as_a_file_error(
    monkeypatch: pytest.MonkeyPatch, stdio_env: dict[str, str]
) -> None:
    def failing() -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", stdio_env["MEMORY_BANK_DATABASE_URL"])
    monkeypatch.setattr(agent_commands, "_agents", failing)
    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["agent", "list", "--org", "acme"], catch_exceptions=False)
    get_settings.cache_clear()
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"error (backend_error): input or output failed: [Errno {errno.EIO}] {os.strerror(errno.EIO)}\n"
