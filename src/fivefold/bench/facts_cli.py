"""``fivefold bench facts``: the command (the benchmark is ``bench.facts``, the fit of the
packaged facts model ``bench.facts_model``)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from fivefold.bench.facts import (
    ABSTAIN,
    DEV_USERS,
    HELD_OUT_USERS,
    load_users,
    run_all,
    table,
)
from fivefold.bench.facts_model import fit_facts_model
from fivefold.embed.base import Embedder


@click.command()
@click.option("--data", type=click.Path(file_okay=False, path_type=Path))
@click.option("--db", help="A store (file path or postgresql:// URL) instead of a throwaway one.")
@click.option("--embedder", type=click.Choice(["minilm", "hashing"]), default="minilm")
@click.option("--json", "json_path", type=click.Path(path_type=Path))
@click.option("--misses", is_flag=True, help="Print the dev users' questions fivefold misses.")
@click.option(
    "--save-model",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write learned fusion fit on the dev users' questions alone (JSON; what fivefold "
    "ships as its packaged facts model).",
)
def facts(
    data: Path | None,
    db: str | None,
    embedder: str,
    json_path: Path | None,
    misses: bool,
    save_model: Path | None,
) -> None:
    """Agent facts: recall@5 per stratum (dev and held-out users), baselines, abstention."""
    from fivefold.embed import HashingEmbedder, MiniLMEmbedder

    model: Embedder = MiniLMEmbedder() if embedder == "minilm" else HashingEmbedder()
    users = load_users(data)
    if save_model is not None:  # first: a fit that fails costs no benchmark run
        save_model.write_text(fit_facts_model(users, model).to_json() + "\n")
        click.echo(f"wrote {save_model}")
    results = run_all(users, model, db)
    loaded = {u.name for u in users}
    for label, names in (("dev", DEV_USERS), ("held out", HELD_OUT_USERS)):
        if loaded & set(names):  # a data folder of other users has no such split
            click.echo(f"\n### {label} users ({', '.join(names)})\n")
            click.echo(table(results, names))
    click.echo("\n### all users\n")
    click.echo(table(results, [u.name for u in users]))
    if misses:
        s = results["fivefold"]
        texts = {q.key: q.text for u in users for q in u.questions}
        for key, stratum, user, value in zip(s.keys, s.strata, s.users, s.recall, strict=True):
            if user in DEV_USERS and stratum != ABSTAIN and value < 1.0:
                click.echo(f"miss {stratum:16} {key}: {texts[key]}")
    if json_path is not None:
        json_path.write_text(json.dumps({k: asdict(v) for k, v in results.items()}))


__all__ = ["facts"]
