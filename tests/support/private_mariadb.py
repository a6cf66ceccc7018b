"""A MariaDB server of the test's own: its own data directory, port and socket, killable at will.

For failure tests that must take a database down mid-write without touching the
shared server. Needs ``mariadb-install-db`` and ``mariadbd`` (Debian's mariadb-server);
without them the test skips with the reason, except in CI, where it fails
(``support.requirements``). Grant tables are skipped: the server listens on loopback
only and lives for one test.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from support.backends import free_port
from support.requirements import unavailable

START_SECONDS = 60


@dataclass
class PrivateMariaDB:
    process: subprocess.Popen[bytes]
    url: str

    def kill(self) -> None:
        """SIGKILL: no shutdown, connections drop mid-statement, as in a crash."""
        self.process.kill()
        self.process.wait(timeout=30)

    def freeze(self) -> None:
        """SIGSTOP: connections stay open and nothing answers, as in a network partition."""
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.process.send_signal(signal.SIGCONT)


def _binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/usr/local/sbin")
    if found is None:
        unavailable("a private MariaDB server", f"{name} is not installed", "apt-get install mariadb-server")
    return found


@contextmanager
def private_mariadb(directory: Path) -> Iterator[PrivateMariaDB]:
    install, server = _binary("mariadb-install-db"), _binary("mariadbd")
    data, port = directory / "data", free_port()
    subprocess.run(
        [install, "--no-defaults", f"--datadir={data}", "--user=root", "--auth-root-authentication-method=normal",
         "--skip-test-db"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    process = subprocess.Popen(
        [server, "--no-defaults", f"--datadir={data}", "--user=root", f"--port={port}", "--bind-address=127.0.0.1",
         f"--socket={directory / 'mysqld.sock'}", f"--pid-file={directory / 'mysqld.pid'}",
         f"--log-error={directory / 'error.log'}", "--skip-grant-tables", "--skip-log-bin",
         "--innodb-buffer-pool-size=16M"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        admin = sa.create_engine(f"mysql+mysqldb://root@127.0.0.1:{port}/mysql")
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with admin.connect() as connection:
                    connection.exec_driver_sql("CREATE DATABASE memory_bank CHARACTER SET utf8mb4")
                break
            except sa.exc.OperationalError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the private MariaDB did not start: {(directory / 'error.log').read_text()[-2000:]}")
                time.sleep(0.2)
        admin.dispose()
        yield PrivateMariaDB(process, f"mysql+mysqldb://root@127.0.0.1:{port}/memory_bank")
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)  # a frozen server takes SIGKILL too, but say so plainly
            process.kill()
        process.wait(timeout=30)
