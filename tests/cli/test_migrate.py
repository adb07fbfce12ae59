"""``fivefold migrate``: a store copied between backends, both ways, verified by counts and by
recalls that rank the same."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

import fivefold
from fivefold import Memory
from fivefold.cli.main import cli
from fivefold.cli.migrate import migrate

NOW = datetime(2026, 4, 2, 9, tzinfo=UTC)
QUERIES = [
    "What did Priya say about the Kestrel budget?",
    "who leads Kestrel?",
    "PP hiring plan",
    "what happened last week?",
    "coffee",
]


_OPENED: list[Memory] = []


@pytest.fixture(autouse=True)
def _close_what_was_opened() -> Iterator[None]:
    """Each store a test opens is closed after it: a Postgres pool left to the garbage
    collector can be collected on its own worker thread, which then cannot join itself (an
    unraisable error pytest pins on whichever test runs then)."""
    yield
    while _OPENED:
        _OPENED.pop().close()


def _open(url: str) -> Memory:
    memory = Memory.open(url, embedder=fivefold.HashingEmbedder())
    _OPENED.append(memory)
    return memory


def _seed(memory: Memory) -> None:
    for namespace in ("acme", "globex"):
        for user in (None, "u1"):
            memory.remember_many(
                [
                    {
                        "content": f"{who}: {topic} note {n} for {namespace}",
                        "namespace": namespace,
                        "user_id": user,
                        "session_id": f"s{n // 5}",
                        "type": "event" if n % 2 else "fact",
                        "event_at": NOW - timedelta(days=n),
                        "metadata": {"n": n, "tags": ["x", "y"]},
                        "entities": [who, "Kestrel"],
                    }
                    for n, (who, topic) in enumerate(
                        [("Priya Patel", "the Kestrel budget"), ("Sarah Chen", "hiring plan")] * 8
                    )
                ]
            )
        memory.relate("Priya Patel", "leads", "Kestrel", namespace=namespace)
        memory.relate("Sarah Chen", "reports_to", "Priya Patel", namespace=namespace, user_id="u1")
        memory.alias("Priya Patel", "PP", namespace=namespace)
    gone = memory.recall("hiring plan note 3", namespace="acme", now=NOW).hits[0].memory.id
    memory.forget(gone, namespace="acme")


def _rankings(memory: Memory) -> list[list[tuple[str, float]]]:
    out = []
    for namespace in ("acme", "globex"):
        for user in (None, "u1"):
            for query in QUERIES:
                hits = memory.recall(query, namespace=namespace, user_id=user, now=NOW).hits
                out.append([(h.memory.content, h.score) for h in hits])
    return out


def _same(a: list[list[tuple[str, float]]], b: list[list[tuple[str, float]]]) -> bool:
    """The same contents in the same order, scores equal but for float noise (the backends
    sum in their own order; learned fusion's probabilities carry that on)."""
    return all(
        [c for c, _ in x] == [c for c, _ in y]
        and [s for _, s in x] == pytest.approx([s for _, s in y], abs=1e-5)
        for x, y in zip(a, b, strict=True)
    ) and len(a) == len(b)


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["sqlite->postgres", "postgres->sqlite"])
def test_a_store_moves_between_backends_whole(direction: str, tmp_path: Path, pg_url: str) -> None:
    sqlite = str(tmp_path / "memory.db")
    source, target = (sqlite, pg_url) if direction.startswith("sqlite") else (pg_url, sqlite)
    with _open(source) as memory:
        _seed(memory)
        # Feedback on 30 recalls of acme, and the model trained on it (if it beat the rules).
        records = memory.browse(namespace="acme", limit=100)
        for n, record in enumerate(records[:30]):  # 30 recalls: texts repeat across users
            result = memory.recall(f"{record.content}, {n}", namespace="acme", now=NOW)
            memory.feedback(result.recall_id, relevant=[record.id])
        trained = memory.train(namespace="acme")
        memory.store.models.save_model("acme", '{"mine": 1}', accepted=True, user_id="u1")
        # As migrate compares: with statistics of the current rows only (the forget above left
        # the embedded lexical index counting the forgotten text until compacted).
        memory.store.admin.compact()
        before = _rankings(memory)
        held = {
            r.id: (r.namespace, r.user_id, r.content)
            for ns in ("acme", "globex")
            for r in memory.browse(namespace=ns, limit=100)
        }
    progress: list[tuple[int, int]] = []
    with _open(source) as src, _open(target) as dst:
        report = migrate(src, dst, batch=7, on_progress=lambda d, t: progress.append((d, t)))
    assert report.verified, report
    assert (report.feedback, report.models) == (30, int(trained.accepted) + 1)
    assert set(report.namespaces) == {"acme", "globex"}
    assert (report.relations, report.aliases, report.sampled) == (4, 2, 20)
    assert progress[-1][0] == progress[-1][1] == 67  # 64 and 4 relations written, 1 forgotten
    with _open(target) as memory:
        assert _same(_rankings(memory), before)
        # Every memory under its own id (ids were numbered anew: a saved one named another).
        copied_ids = {
            r.id: (r.namespace, r.user_id, r.content)
            for ns in ("acme", "globex")
            for r in memory.browse(namespace=ns, limit=100)
        }
        assert copied_ids == held
        assert memory.remember("written after the copy", namespace="acme").id > max(held)
        records = {r.content: r for r in memory.browse(namespace="globex", limit=100)}
        record = records["Sarah Chen: hiring plan note 3 for globex"]
        assert dict(record.metadata) == {"n": 3, "tags": ["x", "y"]}
        assert (record.session_id, record.speaker, record.event_at) == (
            "s0",
            "Sarah Chen",
            NOW - timedelta(days=3),
        )
        assert memory.explain("PP", namespace="acme", now=NOW).query.entity_refs
        assert memory.store.models.learned_model("acme", "u1")[1] == '{"mine": 1}'  # type: ignore[index]
        assert memory.store.models.model_users("acme") == ["u1"]
        copied = memory.store.models.feedback("acme")
        assert len(copied) == 30
        assert all(
            set(entry.labels) <= {r.id for r in memory.browse(namespace="acme", limit=100)}
            and len(entry.labels) == 1
            for entry in copied
        )


def test_the_destination_must_be_empty(tmp_path: Path, pg_url: str) -> None:
    with _open(pg_url) as memory:
        memory.remember("already here")
    with _open(str(tmp_path / "a.db")) as src, _open(pg_url) as dst:
        src.remember("to copy")
        with pytest.raises(fivefold.InvalidInput, match="empty store"):
            migrate(src, dst)


@pytest.mark.slow
def test_the_command_copies_and_verifies(tmp_path: Path, pg_url: str) -> None:
    source = str(tmp_path / "cli.db")
    with Memory.open(source) as memory:  # the default model, as the command opens it
        memory.remember_many(
            [{"content": f"Priya Patel reviewed the Kestrel budget, round {n}"} for n in range(12)]
        )
        memory.relate("Priya Patel", "leads", "Kestrel")
    result = CliRunner().invoke(cli, ["migrate", source, pg_url, "--sample", "5"])
    assert result.exit_code == 0, result.output
    assert "ok: namespace 'default': memories 13 -> 13" in result.output
    assert "5/5 sampled recalls ranked the same" in result.output
    again = CliRunner().invoke(cli, ["migrate", source, pg_url])
    assert again.exit_code == 2
    assert "empty store" in again.output


def _old_memory(source: Memory, **fields: object) -> None:
    """A memory written below the API's checks, as an older version (or SQLite) took it."""
    from fivefold.store.records import NewMemory
    from fivefold.types import Scope

    source.store.writes.insert_memories(
        [
            NewMemory(
                content=str(fields.get("content", "an old memory")),
                type=fivefold.MemoryType.FACT,
                predicate=None,
                event_at=None,
                created_at=NOW,
                entities=tuple(fields.get("entities", ())),  # type: ignore[arg-type]
                importance=0.5,
                scope=Scope(str(fields.get("namespace", "zzz")), fields.get("user_id")),  # type: ignore[arg-type]
                session_id=fields.get("session_id"),  # type: ignore[arg-type]
                speaker=fields.get("speaker"),  # type: ignore[arg-type]
            )
        ],
        source.embedder.embed([str(fields.get("content", "an old memory"))]),
    )


LONG = "".join(chr(0x4E00 + (n * 7919) % 3000) for n in range(200))  # 600 bytes


@pytest.mark.parametrize(
    "fields",
    [
        {"namespace": LONG},
        {"user_id": LONG},
        {"session_id": LONG},
        {"entities": (LONG,)},
        {"speaker": "Pri\x00ya"},
        {"content": "an old\x00memory"},
    ],
    ids=["namespace", "user_id", "session_id", "entity", "nul-speaker", "nul-content"],
)
def test_what_postgres_cannot_hold_is_refused_before_anything_is_copied(
    tmp_path: Path, pg_url: str, fields: dict[str, object]
) -> None:
    """An older (or an embedded) store can hold names past the bounds, or a NUL character;
    Postgres could not key or hold them. The copy names the namespace and memory, and writes
    nothing."""
    source = _open(str(tmp_path / "old.db"))
    source.remember("a normal memory", namespace="aaa")  # copied first, were it not checked
    _old_memory(source, **fields)
    namespace = str(fields.get("namespace", "zzz"))
    assert len(source.recall("old memory", namespace=namespace).hits) == 1
    target = _open(pg_url)
    with pytest.raises(fivefold.InvalidInput, match="nothing was copied") as info:
        migrate(source, target)
    assert "bytes" in str(info.value) or "NUL" in str(info.value)
    assert target.stats().memories == 0


def test_an_embedded_store_with_long_names_copies_to_another(tmp_path: Path) -> None:
    """The embedded store keys no name: a copy between two keeps them (and indexes the
    tokens again, cut at 255 characters)."""
    source = _open(str(tmp_path / "old.db"))
    _old_memory(source, namespace=LONG, session_id=LONG, entities=(LONG,))
    target = _open(str(tmp_path / "new.db"))
    report = migrate(source, target)
    assert report.verified
    assert target.recall("old memory", namespace=LONG).hits[0].memory.session_id == LONG


def test_a_nul_in_a_relation_or_a_feedback_query_is_refused_before_anything_is_copied(
    tmp_path: Path, pg_url: str
) -> None:
    from fivefold.store.records import NewEdge
    from fivefold.types import EdgeKind, Scope

    for case in ("relation", "feedback"):
        source = _open(str(tmp_path / f"{case}.db"))
        source.remember("a normal memory about Sarah and Priya", namespace="aaa")
        if case == "relation":  # as an older version took it
            edge = NewEdge(
                "Sarah", "kno\x00ws", "Priya", EdgeKind.STRUCTURAL, 1.0, None, None, Scope("zzz")
            )
            source.store.writes.add_edge(edge)
        else:  # a recall's query may hold one, and its feedback keeps it
            source.store.models.add_feedback("zzz", "bud\x00get", "{}", {}, NOW)
        source.remember("another memory", namespace="zzz")
        target = _open(pg_url)
        with pytest.raises(fivefold.InvalidInput, match="nothing was copied") as info:
            migrate(source, target)
        assert "NUL" in str(info.value)
        assert target.stats().memories == 0


def test_a_postgres_store_copies_to_another_whatever_names_it_holds(
    postgres_server: str, pg_url: str
) -> None:
    """A Postgres store holds only what Postgres can: a copy into another is not checked
    (an older version's names past the write bounds included)."""
    import uuid

    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in postgres_server else "?"
    source = _open(f"{postgres_server}{separator}options=-csearch_path%3D{schema},public")
    _old_memory(source, namespace=LONG)  # 600 bytes: Postgres keys it, below the write bound
    report = migrate(source, _open(pg_url))
    assert report.verified
    assert report.namespaces[LONG].memories == (1, 1)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_copy_that_did_not_finish_is_reported_and_refused(
    backend: str, tmp_path: Path, pg_url: str
) -> None:
    """A copy cut off half way (kill -9 during `fivefold migrate`) left a store that `fivefold
    doctor` called ok; now its mark stays until the copy is whole."""
    source = _open(str(tmp_path / "src.db"))
    _seed(source)
    target = _open(str(tmp_path / "dst.db") if backend == "sqlite" else pg_url)

    def cut_off(done: int, total: int) -> None:
        raise KeyboardInterrupt  # as Ctrl-C or a kill after the first batch

    with pytest.raises(KeyboardInterrupt):
        migrate(source, target, batch=5, on_progress=cut_off)
    assert target.stats().memories == 5  # a part
    findings = [f for f in target.store.admin.check() if not f.ok]
    assert [f.part for f in findings] == ["copy"]
    assert "has not finished" in findings[0].detail
    assert "src.db" in findings[0].detail
    assert "5 memories copied" in findings[0].detail
    with pytest.raises(fivefold.InvalidInput, match="did not finish"):
        migrate(source, target)
    onward = _open(str(tmp_path / "onward.db"))
    with pytest.raises(fivefold.InvalidInput, match="copied on, it would look whole"):
        migrate(target, onward)  # the part would come out unmarked
    assert onward.stats().memories == 0
    with pytest.raises(fivefold.InvalidInput, match="under way or did not finish"):
        target.store.admin.mark_copy("a second copy")  # one claim at a time, atomically
    whole = _open(str(tmp_path / "whole.db") if backend == "sqlite" else _fresh(pg_url))
    assert migrate(source, whole).verified
    assert whole.store.admin.copy_mark() is None
    assert all(f.ok for f in whole.store.admin.check())


def _fresh(pg_url: str) -> str:
    """Another empty schema of the same server as ``pg_url``."""
    import uuid

    import psycopg

    server, _, _ = pg_url.partition("options=")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.rstrip("?&"), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{server}options=-csearch_path%3D{schema},public"


@pytest.mark.slow
def test_doctor_reports_a_copy_killed_half_way(tmp_path: Path) -> None:
    """kill -9 of a real migration: `doctor`'s check says the copy did not finish."""
    import signal
    import subprocess
    import sys
    import time

    source = _open(str(tmp_path / "big.db"))
    source.remember_many([{"content": f"note {i} about the lake"} for i in range(3_000)])
    source.close()
    destination = tmp_path / "half.db"
    script = (
        "import sys, fivefold\n"
        "from fivefold.cli.migrate import migrate\n"
        "src = fivefold.Memory.open(sys.argv[1], embedder=fivefold.HashingEmbedder())\n"
        "dst = fivefold.Memory.open(sys.argv[2], embedder=fivefold.HashingEmbedder())\n"
        "migrate(src, dst, batch=100, on_progress=lambda d, t: print(d, flush=True))\n"
    )
    command = [sys.executable, "-c", script, str(tmp_path / "big.db"), str(destination)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert int(process.stdout.readline()) == 100  # the first batch is in
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    time.sleep(0.1)
    with _open(str(destination)) as half:  # what `fivefold doctor` runs
        problems = [f for f in half.store.admin.check() if not f.ok]
        assert 100 <= half.stats().memories < 3_000
    assert [f.part for f in problems] == ["copy"]
    assert "a copy into this store has not finished (from " in problems[0].detail


def test_an_older_stores_alias_naming_two_entities_is_left_out_and_said(
    tmp_path: Path, pg_url: str
) -> None:
    """A store made before ``alias`` refused them can hold an alias that is another entity's
    name, or one key for two entities: the copy crashed on it half way, its mark left behind. Left
    out and listed; the first of a key's entities is kept, as the
    source's writes resolved it."""
    source = _open(str(tmp_path / "old.db"))
    source.remember("Bob Jones moved to Bergen", entities=["Bob Jones"])
    source.remember("Ann Smith and Dana Lee met", entities=["Ann Smith", "Dana Lee"])
    source.alias("Ann Smith", "AS")
    conn = source.store._core.conn  # type: ignore[attr-defined]
    ids = dict(conn.execute("SELECT name, id FROM entities").fetchall())
    conn.executemany(  # what alias() accepted before
        "INSERT INTO aliases (namespace, norm, alias, entity_id) VALUES ('default', ?, ?, ?)",
        [("bob jones", "Bob Jones", ids["Ann Smith"]), ("as", "AS", ids["Dana Lee"])],
    )
    target = _open(pg_url)
    report = migrate(source, target)
    assert report.verified
    assert len(report.aliases_left_out) == 2
    assert all("already names the entity" in line for line in report.aliases_left_out)
    assert target.alias("Ann Smith", "AS").aliases == ("AS",)
    assert target.store.admin.copy_mark() is None


def test_a_postgres_url_naming_no_store_is_not_made_one(
    tmp_path: Path, postgres_server: str
) -> None:
    """`doctor`, `stats` and migrate's source made a mistyped schema and an empty store in it,
    then said ok (exit 0, after missing schemas were made on open):
    exit 3, and no schema made."""
    name = f"mistyped_{uuid.uuid4().hex[:8]}"
    separator = "&" if "?" in postgres_server else "?"
    url = f"{postgres_server}{separator}options=-csearch_path%3D{name},public"
    runner = CliRunner()
    for args in (
        ["--db", url, "doctor"],
        ["--db", url, "stats"],
        ["migrate", url, str(tmp_path / "copy.db")],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 3, result.output
        assert "no store at" in result.stderr
    with psycopg.connect(postgres_server) as conn:
        made = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
    assert made is None
    assert not (tmp_path / "copy.db").exists()


def test_ctrl_c_during_the_command_says_what_the_destination_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It printed click's "Aborted!" alone, while the destination held
    a marked part of the copy."""
    import fivefold.cli.migrate as migrating

    source = str(tmp_path / "cli.db")
    with Memory.open(source) as memory:
        memory.remember_many([{"content": f"note {n} on the Kestrel budget"} for n in range(12)])
    copy = migrating.migrate

    def cut_off(*args: object, **kwargs: object) -> migrating.MigrationReport:
        def interrupt(done: int, total: int) -> None:
            raise KeyboardInterrupt

        return copy(*args, **{**kwargs, "batch": 5, "on_progress": interrupt})  # type: ignore[arg-type]

    monkeypatch.setattr(migrating, "migrate", cut_off)
    result = CliRunner().invoke(cli, ["migrate", source, str(tmp_path / "part.db")])
    assert result.exit_code == 130, result.output
    assert "holds part of the copy, marked unfinished" in result.stderr
    assert "Aborted" not in result.output


@pytest.mark.slow
def test_ctrl_c_while_the_copy_is_verified_says_it_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut off after the copy (its mark cleared) while recalls were compared, it said nothing
    was copied."""
    import fivefold.cli.migrate as migrating

    source = str(tmp_path / "cli.db")
    with Memory.open(source) as memory:
        memory.remember_many([{"content": f"note {n} on the Kestrel budget"} for n in range(3)])

    def interrupted(*args: object, **kwargs: object) -> tuple[int, int]:
        raise KeyboardInterrupt

    monkeypatch.setattr(migrating, "_compare_recalls", interrupted)
    result = CliRunner().invoke(cli, ["migrate", source, str(tmp_path / "whole.db")])
    assert result.exit_code == 130, result.output
    assert "was made, not verified" in result.stderr


def _empty(backend: str, tmp_path: Path, pg_url: str) -> Memory:
    return _open(str(tmp_path / "dst.db") if backend == "sqlite" else pg_url)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_namespace_of_relations_alone_is_copied(
    backend: str, tmp_path: Path, pg_url: str
) -> None:
    """A namespace holding a relation (``record=False``) and an alias but no memory was left
    out, and the copy said it verified."""
    source = _open(str(tmp_path / "src.db"))
    _seed(source)
    source.relate("Ann", "manages", "Ben", namespace="graphonly", record=False)
    source.alias("Ann", "Annie", namespace="graphonly")
    target = _empty(backend, tmp_path, pg_url)
    report = migrate(source, target)
    assert report.verified, report
    assert report.namespaces["graphonly"].entities == (2, 2)
    assert report.namespaces["graphonly"].edges == (1, 1)
    assert target.store.admin.aliases("graphonly") == [("Ann", "Annie")]
    assert [
        (e.source, e.relation, e.target) for e in target.store.admin.relations("graphonly")
    ] == [("Ann", "manages", "Ben")]


@pytest.mark.slow
def test_what_the_source_gains_or_loses_during_the_copy_is_counted(tmp_path: Path) -> None:
    """A memory forgotten from the source while the copy ran raised a KeyError traceback, and
    a namespace another writer began meanwhile was missed by a copy that said it verified."""
    source = _open(str(tmp_path / "src.db"))
    _seed(source)
    newest = source.browse(namespace="acme", limit=1)[0].id  # in the namespace's last chunk
    target = _open(str(tmp_path / "dst.db"))
    calls = 0

    def meanwhile(done: int, total: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:  # after acme's first chunk: its ids are listed
            source.forget(newest, namespace="acme")
            source.remember("written while the copy ran", namespace="omega")

    report = migrate(source, target, batch=5, on_progress=meanwhile)
    assert report.namespaces["acme"].memories == (32, 32)  # the forgotten one in neither
    assert report.namespaces["omega"].memories == (1, 0)
    assert not report.verified


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_destination_holding_relations_or_aliases_is_not_empty(
    backend: str, tmp_path: Path, pg_url: str
) -> None:
    """Only memories made a store non-empty: a copy went into one holding an alias of its own,
    which took over a copied relation's name."""
    source = _open(str(tmp_path / "src.db"))
    _seed(source)
    target = _empty(backend, tmp_path, pg_url)
    target.relate("Evil Corp", "owns", "Kestrel", namespace="acme", record=False)
    target.alias("Evil Corp", "Priya", namespace="acme")
    with pytest.raises(fivefold.InvalidInput, match="already holds data"):
        migrate(source, target)
    with pytest.raises(fivefold.InvalidInput, match="holds data"):
        target.store.admin.mark_copy("another copy")  # the claim's own check, in its transaction
    assert target.store.admin.copy_mark() is None
    assert target.stats().memories == 0
    assert target.store.admin.held_namespaces() == ["acme"]


def test_a_refused_copy_makes_no_destination(tmp_path: Path) -> None:
    """`migrate` from an unfinished copy was refused after it had made the destination (an
    empty store at a new path; a new Postgres schema's tables)."""
    source = tmp_path / "part.db"
    with Memory.open(source) as memory:  # the default model, as the command opens it
        memory.store.admin.mark_copy("from elsewhere")
        memory.remember("a memory of the part copied")
    destination = tmp_path / "new.db"
    result = CliRunner().invoke(cli, ["migrate", str(source), str(destination)])
    assert result.exit_code == 2, result.output
    assert "copied on, it would look whole" in result.output
    assert not destination.exists()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_ids_a_destination_gave_before_are_not_given_again(
    backend: str, tmp_path: Path, pg_url: str
) -> None:
    """A destination whose memories were all forgotten looked empty: the copy marked it, then
    failed on its first batch (the ids it gave before are not given twice), leaving it marked
    unfinished for good. Refused before anything is marked; and the source's own forgotten
    newest id is not given anew in the copy."""
    source = _open(str(tmp_path / "src.db"))
    kept, newest = source.remember_many([{"content": "kept note"}, {"content": "newest note"}])
    source.forget(newest.id)
    used = _empty(backend, tmp_path, pg_url)
    for n in range(5):
        used.forget(used.remember(f"gone {n}").id)
    with pytest.raises(fivefold.InvalidInput, match="has given ids up to"):
        migrate(source, used, batch=1)
    assert used.store.admin.copy_mark() is None  # not left marked
    fresh = _open(str(tmp_path / "fresh.db"))
    assert migrate(source, fresh).verified
    assert fresh.get(kept.id).content == "kept note"
    assert fresh.remember("after the copy").id > newest.id


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_writer_into_the_destination_stops_the_copy(
    backend: str, tmp_path: Path, pg_url: str
) -> None:
    """Its ids pass the copy's: the copy stops, saying so (it was "id N is below this store's
    next id"), and no id is held by two memories."""
    source = _open(str(tmp_path / "src.db"))
    _seed(source)
    target = _empty(backend, tmp_path, pg_url)

    def meanwhile(done: int, total: int) -> None:
        if done == 5:
            target.remember("a writer into the destination", namespace="other")

    with pytest.raises(fivefold.StoreError, match="another process wrote into it during the copy"):
        migrate(source, target, batch=5, on_progress=meanwhile)
    ids = [r.id for ns in ("acme", "other") for r in target.browse(namespace=ns, limit=100)]
    assert len(ids) == len(set(ids)) == 6
