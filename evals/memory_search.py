"""Memory-search quality on LoCoMo conversations: does the turn that answers a question come back?

    python evals/memory_search.py --conversations DIR [--backend sqlite|mysql] [--noise-orgs N] [--json] [--results [FILE]]

Each ``*.json`` in DIR is one LoCoMo conversation (``session_N`` turn lists with
``session_N_date_time``, and ``qa``). Per backend (both unless ``--backend``), on a
fresh database, through the real app in process (FastAPI ``TestClient``, tokens from
``TokenStore``: the same auth, handlers and store as a deployment):

1. ``--noise-orgs N`` first fills N other orgs with the conversations' turns, cycled,
   speakers renamed and a seeded tenth of the turns left out, so that every org differs
   and the shared index holds other tenants' words;
2. each conversation gets its own org and user; every turn is saved with ``postMemory``
   as one memory: the turn's text as ``content``, the speaker as a tag, the session date
   (and the caption of an image shared in the turn, if any) as contexts. The turn's
   ``dia_id`` is the Idempotency-Key, so two turns with the same words stay two memories;
3. every question except category 5 (adversarial, no answer in the conversation) goes
   through ``getMemorySearch`` with ``limit=10``.

Metrics, averaged over questions: evidence recall@5 and recall@10 (share of the
question's evidence turns in the top k) and MRR (reciprocal rank of the first evidence
turn in the top 10, else 0); plus wall and process-CPU time per search request (median,
p95). Questions without evidence are counted and left out.

``--results`` rewrites this run's section of ``evals/RESULTS.md`` (``results.py``).

The semantic hybrid is switched on as in a deployment, by the setting
``MEMORY_BANK_SEMANTIC_SEARCH=true`` (needs the ``semantic`` extra).

MySQL/MariaDB comes from ``MEMORY_BANK_TEST_MYSQL_URL`` (default
``mysql+mysqldb://root@127.0.0.1:3306``); the harness creates a fresh database there
(``tests/support/backends.fresh_database``) and drops it afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src"), str(ROOT / "evals"), str(ROOT / "tests")]

from support.backends import MYSQL_URL_VARIABLE, fresh_database  # noqa: E402
from capability_search import latency_summary, mean_metrics, report  # noqa: E402
from results import add_results_option, table, write_section  # noqa: E402

from memory_bank.app import create_app  # noqa: E402
from memory_bank.settings import Settings  # noqa: E402

DEFAULT_MYSQL = "mysql+mysqldb://root@127.0.0.1:3306"
LIMIT = 10
SEED = 20240601
#: Speaker names the noise orgs use instead of the conversation's own.
NOISE_NAMES = ("Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Harper", "Jordan", "Kendall", "Logan")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: str
    date: str
    caption: str | None


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    name: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def read_conversation(path: Path) -> Conversation:
    """One LoCoMo file; evidence lists like ``["D8:6; D9:17"]`` are split into ids."""
    data = json.loads(path.read_text(encoding="utf-8"))
    turns = [
        Turn(t["dia_id"], t["speaker"], t["text"], key, str(data.get(f"{key}_date_time", "")), t.get("blip_caption"))
        for key, session in data.items()
        if key.startswith("session_") and isinstance(session, list)
        for t in session
    ]
    questions = [
        Question(q["question"], tuple(e for raw in q.get("evidence", []) for e in _EVIDENCE_SPLIT.split(raw) if e), q["category"])
        for q in data.get("qa", [])
        if int(q["category"]) != 5
    ]
    return Conversation(path.stem, (data["speaker_a"], data["speaker_b"]), tuple(turns), tuple(questions))


def memory_body(turn: Turn, speaker: str | None = None, text: str | None = None) -> dict[str, Any]:
    """The postMemory body for one turn (optionally with the speaker renamed)."""
    contexts = [{"snippet": turn.date or "undated", "origin": f"{turn.session} date"}]
    if turn.caption:
        contexts.append({"snippet": turn.caption, "origin": f"image shared in {turn.dia_id}"})
    return {"content": text or turn.text, "tags": [speaker or turn.speaker], "contexts": contexts, "source": "conversation"}


def noise_bodies(conversation: Conversation, variant: int, rng: random.Random) -> Iterator[tuple[str, dict[str, Any]]]:
    """A varied copy of ``conversation``: other speaker names, about a tenth of the turns left out."""
    names = {speaker: NOISE_NAMES[(2 * variant + n) % len(NOISE_NAMES)] for n, speaker in enumerate(conversation.speakers)}
    rename = re.compile("|".join(re.escape(n) for n in names))
    for turn in conversation.turns:
        if rng.random() >= 0.1:
            text = rename.sub(lambda m: names[m[0]], turn.text)
            yield turn.dia_id, memory_body(turn, names.get(turn.speaker, turn.speaker), text)


class Api:
    """One app in process; ``client(org)`` is a client acting as that org's user."""

    def __init__(self, settings: Settings) -> None:
        self._app = create_app(settings)
        self._tokens = self._app.state.tokens
        self._root = TestClient(self._app)

    def __enter__(self) -> Api:
        self._root.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._root.__exit__(*exc)

    def client(self, org: str) -> TestClient:
        token, _ = self._tokens.create(org, "eval", "eval-agent", ["memory:read", "memory:write"])
        return TestClient(self._app, headers={"Authorization": f"Bearer {token}"})


def save(client: TestClient, bodies: Iterator[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """Save every body; dia_id -> memory id."""
    ids = {}
    for dia_id, body in bodies:
        response = client.post("/v1/memory", json=body, headers={"Idempotency-Key": dia_id})
        response.raise_for_status()
        ids[dia_id] = response.json()["id"]
    return ids


def question_metrics(evidence: set[str], ranked: Sequence[str]) -> dict[str, float]:
    """recall@5, recall@10 and reciprocal rank of one question's ranking of memory ids."""
    first = next((i for i, memory_id in enumerate(ranked) if memory_id in evidence), None)
    return {
        "recall@5": len(evidence & set(ranked[:5])) / len(evidence),
        "recall@10": len(evidence & set(ranked[:10])) / len(evidence),
        "mrr": 1 / (first + 1) if first is not None else 0.0,
    }


def ask(
    client: TestClient, conversation: Conversation, ids: dict[str, str]
) -> tuple[list[dict[str, float]], list[float], list[float], int]:
    """Every question's metrics, wall and CPU ms per search, and how many questions had no evidence."""
    rows, wall, cpu, skipped = [], [], [], 0
    for question in conversation.questions:
        evidence = {ids.get(e, f"missing:{e}") for e in question.evidence}
        if not evidence:
            skipped += 1
            continue
        started, started_cpu = time.perf_counter(), time.process_time()
        response = client.get("/v1/memory/search", params={"q": question.text, "limit": LIMIT})
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        response.raise_for_status()
        rows.append(question_metrics(evidence, [hit["id"] for hit in response.json()["results"]]))
    return rows, wall, cpu, skipped


def run_backend(url: str, conversations: Sequence[Conversation], noise_orgs: int) -> dict[str, Any]:
    """Load noise, then each conversation; ask its questions. The figures for one database."""
    settings = Settings(database_url=url, rate_limit_rpm=1_000_000_000)
    rng = random.Random(SEED)
    rows: list[dict[str, float]] = []
    wall: list[float] = []
    cpu: list[float] = []
    per_conversation: dict[str, dict[str, float]] = {}
    skipped = 0
    with Api(settings) as api:
        started = time.perf_counter()
        for n in range(noise_orgs):
            source = conversations[n % len(conversations)]
            save(api.client(f"noise-{n}"), noise_bodies(source, n // len(conversations) + 1, rng))
        for conversation in conversations:
            client = api.client(f"locomo-{conversation.name}")
            ids = save(client, ((t.dia_id, memory_body(t)) for t in conversation.turns))
            found, times, cpu_times, none = ask(client, conversation, ids)
            rows += found
            wall += times
            cpu += cpu_times
            skipped += none
            per_conversation[conversation.name] = mean_metrics(found) | {"questions": len(found)}
        load_seconds = time.perf_counter() - started
    return {
        **mean_metrics(rows),
        "questions": len(rows),
        "no_evidence": skipped,
        **latency_summary(wall, "search_ms"),
        **latency_summary(cpu, "search_cpu_ms"),
        "load_and_ask_s": round(load_seconds, 1),
        "conversations": per_conversation,
    }


@contextmanager
def database(backend: str) -> Iterator[str]:
    """A fresh, empty database URL for ``backend``, removed afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as scratch:
            yield f"sqlite:///{scratch}/eval.db"
        return
    with fresh_database(make_url(os.environ.get(MYSQL_URL_VARIABLE) or DEFAULT_MYSQL)) as url:
        yield url


def evaluate(conversations: Sequence[Conversation], backends: Sequence[str], noise_orgs: int) -> dict[str, Any]:
    """The harness's one JSON object: settings, then the figures per backend."""
    figures = {}
    for backend in backends:
        with database(backend) as url:
            figures[backend] = run_backend(url, conversations, noise_orgs)
    semantic = Settings().semantic_search
    return {"conversations": [c.name for c in conversations], "noise_orgs": noise_orgs, "semantic": semantic, "backends": figures}


def print_table(result: dict[str, Any]) -> None:
    """Figures per backend, then per conversation."""
    print(f"conversations {', '.join(result['conversations'])}; noise orgs {result['noise_orgs']}; semantic {result['semantic']}")
    for backend, figures in result["backends"].items():
        print(f"[{backend}]")
        report({k: v for k, v in figures.items() if k != "conversations"}, as_json=False)
        for name, per in figures["conversations"].items():
            print(f"{'conversation ' + name:>20}  {per}")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=Path, required=True, help="directory of LoCoMo-format *.json files")
    parser.add_argument("--backend", choices=("sqlite", "mysql"), help="one backend (default: both)")
    parser.add_argument("--noise-orgs", type=int, default=0, help="other orgs loaded first with the conversations' turns")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_results_option(parser)
    args = parser.parse_args(argv)
    files = sorted(args.conversations.glob("*.json"))
    if not files:
        parser.error(f"no *.json conversations in {args.conversations}")
    result = evaluate([read_conversation(f) for f in files], [args.backend] if args.backend else ["sqlite", "mysql"], args.noise_orgs)
    if args.json:
        report(result, as_json=True)
    else:
        print_table(result)
    if args.results:
        write_results(args.results, result)
    return result


def write_results(page: Path, result: dict[str, Any]) -> None:
    """This run's section of the results page: one row per backend, then per conversation."""
    rows = []
    for backend, figures in result["backends"].items():
        rows.append({"backend": backend, "conversation": "all", **{k: v for k, v in figures.items() if k != "conversations"}})
        rows += [{"backend": backend, "conversation": name, **per} for name, per in figures["conversations"].items()]
    backends = list(result["backends"])
    name = "-".join(
        ["locomo", *(backends if len(backends) == 1 else []), *(["semantic"] if result["semantic"] else [])]
        + ([f"noise{result['noise_orgs']}"] if result["noise_orgs"] else [])
    )
    how = "lexical + semantic" if result["semantic"] else "lexical"
    noise = f", {result['noise_orgs']} noise orgs" if result["noise_orgs"] else ""
    environment = ["MEMORY_BANK_SEMANTIC_SEARCH=true"] if result["semantic"] else []
    title = f"Memory search, LoCoMo dev ({', '.join(result['conversations'])}), {how}{noise}"
    write_section(page, name, title, table(rows), environment)


if __name__ == "__main__":
    main()
