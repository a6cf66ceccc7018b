"""What a JWT access token costs per request next to an ``mb_`` token.

    .venv/bin/python bench/oauth_verify.py [--rounds N]

A local authorization server (stdlib HTTP on loopback: RFC 8414 metadata and a JWKS with
an RS256 and an ES256 key) and the app on a fresh SQLite file, in process. For each kind
of token, N rounds of the token check alone (``api.auth.principal_of``: a table look-up
for ``mb_``, a signature and claim check against the cached keys for a JWT) and of a
whole ``GET /v1/memory/search`` through the app. Prints median and p95 in microseconds.
The first JWT check fetches the metadata and keys; it is made before timing starts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from joserfc import jwt
from joserfc.jwk import ECKey, Key, KeySet, RSAKey

from memory_bank.api.auth import principal_of
from memory_bank.app import create_app
from memory_bank.settings import Settings

PUBLIC_URL = "http://testserver"


@contextmanager
def key_server(keys: list[Key]) -> Iterator[str]:
    """An issuer on loopback publishing ``keys``; yields its URL."""
    documents: dict[str, Any] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(documents.get(self.path)).encode()
            self.send_response(200 if self.path in documents else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    issuer = f"http://127.0.0.1:{httpd.server_port}"
    documents["/.well-known/oauth-authorization-server"] = {"issuer": issuer, "jwks_uri": issuer + "/jwks"}
    documents["/jwks"] = KeySet(keys).as_dict(private=False)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield issuer
    finally:
        httpd.shutdown()


def timed(rounds: int, call: Callable[[], Any]) -> tuple[float, float]:
    """Median and p95 of ``call`` in microseconds."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2000)
    rounds = parser.parse_args().rounds
    rsa = RSAKey.generate_key(2048, parameters={"alg": "RS256"})
    ec = ECKey.generate_key("P-256", parameters={"alg": "ES256"})
    for key in (rsa, ec):
        key.ensure_kid()
    with key_server([rsa, ec]) as issuer, tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            database_url=f"sqlite:///{Path(folder) / 'bench.db'}", public_url=PUBLIC_URL, oauth_issuer=issuer,
            rate_limit_rpm=10_000_000,
        )  # fmt: skip
        app = create_app(settings)
        now = int(time.time())
        claims = {"iss": issuer, "aud": PUBLIC_URL, "sub": "ada", "org_id": "acme", "scope": "memory:read"}
        claims |= {"iat": now, "exp": now + 3600}
        tokens = {
            "mb_ token": app.state.tokens.create("acme", "ada", None, ["memory:read"])[0],
            "JWT RS256": jwt.encode({"alg": "RS256", "kid": rsa.kid, "typ": "at+jwt"}, claims, rsa),
            "JWT ES256": jwt.encode({"alg": "ES256", "kid": ec.kid, "typ": "at+jwt"}, claims, ec),
        }
        with TestClient(app) as client:
            portal = client.portal  # the app's own event loop, where its verifier runs
            assert portal is not None
            print(f"{rounds} rounds each; microseconds, median / p95")
            print(f"{'token':<10} {'token check':>20} {'GET /v1/memory/search':>26}")
            for name, token in tokens.items():

                def check(token: str = token) -> Any:
                    return portal.call(principal_of, app.state.tokens, token, app.state.oauth)

                def search(token: str = token) -> Any:
                    response = client.get("/v1/memory/search", params={"q": "x"}, headers={"Authorization": f"Bearer {token}"})
                    assert response.status_code == 200, response.text

                check(), search()  # the first JWT fetches the metadata and the keys
                checked, searched = timed(rounds, check), timed(rounds // 4, search)
                print(f"{name:<10} {checked[0]:>10.0f} / {checked[1]:>7.0f} {searched[0]:>15.0f} / {searched[1]:>8.0f}")
        app.state.engine.dispose()


if __name__ == "__main__":
    main()
