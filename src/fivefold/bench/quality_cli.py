"""Click commands of ``fivefold bench`` that measure retrieval quality: ``locomo``,
``longmemeval`` and ``beir``. Each ingests its dataset into a throwaway store, asks every question
once and prints the table of every system (``fivefold.bench.systems``); ``--json`` and
``--report`` keep the full result.

The commands are plain ``click.Command`` objects; the ``bench`` group adds them (``COMMANDS``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click
from rich.console import Console
from rich.progress import Progress

from fivefold import errors
from fivefold.bench.datasets import Dataset, load_beir, load_locomo, load_longmemeval
from fivefold.bench.policy_report import baselines_table, plan_latency_table, policy_table
from fivefold.bench.report import (
    category_table,
    change_table,
    halves_table,
    summary_table,
    write_json,
    write_report,
)
from fivefold.bench.runner import (
    LOCOMO_CATEGORIES,
    BenchResult,
    limit_dataset,
    run_benchmark,
    significance_label,
)
from fivefold.config import Config
from fivefold.config.file import config_in_effect, load_config
from fivefold.embed.base import Embedder
from fivefold.memory import Memory
from fivefold.types import OptimizerMode

__all__ = ["COMMANDS", "LOCOMO_ENV", "beir", "default_locomo_path", "locomo", "longmemeval"]

P = ParamSpec("P")
R = TypeVar("R")

# Where the LoCoMo README puts the data: ../shared/data/locomo/ beside the repository.
LOCOMO_RELATIVE = Path("shared/data/locomo/locomo_public.json")
LOCOMO_ENV = "FIVEFOLD_LOCOMO"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Options:
    limit: int | None
    json_path: Path | None
    report_dir: Path | None
    save_model: Path | None
    k_max: int
    budget: str
    resamples: int
    embedder: str
    policies: bool
    rerank_model: Path | None
    rounds: int
    db: str | None


def default_locomo_path(*starts: Path) -> Path | None:
    """``shared/data/locomo/locomo_public.json`` in the nearest folder above any of ``starts``
    (default: the current directory, then this module's folder), so the default works from the
    repository root, from a subfolder and from an editable install."""
    for start in starts or (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            candidate = folder / LOCOMO_RELATIVE
            if candidate.is_file():
                return candidate
    return None


_Decorator = Callable[[Callable[..., None]], Callable[..., None]]

# Options every dataset command takes, after its own --data and --limit.
_SHARED_OPTIONS: tuple[_Decorator, ...] = (
    click.option(
        "--json",
        "json_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Write the full result (per-question scores included) as JSON.",
    ),
    click.option(
        "--report",
        "report_dir",
        type=click.Path(file_okay=False, path_type=Path),
        help="Write report.md and recall_at_k.png into this directory.",
    ),
    click.option(
        "--save-model",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Write learned fusion fit on every namespace's questions (JSON; what fivefold "
        "ships as its packaged model). Only where the benchmark cross-validated it (two or "
        "more namespaces with questions).",
    ),
    click.option(
        "--k-max",
        type=click.IntRange(min=1),
        default=50,
        show_default=True,
        help="Depth of every ranked list scored (the deepest recall cutoff).",
    ),
    click.option(
        "--budget",
        type=click.Choice(["low", "mid", "high"]),
        default="mid",
        show_default=True,
        help="Recall budget: candidate depth of each retriever.",
    ),
    click.option(
        "--resamples",
        type=click.IntRange(min=100),
        default=10_000,
        show_default=True,
        help="Paired-bootstrap resamples per system compared with fivefold.",
    ),
    click.option(
        "--embedder",
        type=click.Choice(["minilm", "hashing"]),
        default="minilm",
        show_default=True,
        help="minilm: the default model. hashing: fast and not semantic, for smoke runs.",
    ),
    click.option(
        "--policies/--no-policies",
        default=True,
        show_default=True,
        help="Recall every question once per read policy (optimizer off, negation, MMR, "
        "rewrites, RRF constant, graph gate, cache) for the before/after table.",
    ),
    click.option(
        "--rounds",
        type=click.IntRange(min=1),
        default=3,
        show_default=True,
        help="Recalls per question and policy; the fastest is its latency (keeps stalls of a "
        "shared machine out of the p99).",
    ),
    click.option(
        "--db",
        help="An empty store (a file path or a postgresql:// URL) for the engine's memories "
        "instead of a throwaway in-memory SQLite store: the same benchmark on another backend. "
        "The plain baselines stay in memory.",
    ),
    click.option(
        "--rerank-model",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="A cross-encoder directory (ONNX + tokenizer.json): adds a rerank policy.",
    ),
)


def _common(limit_help: str) -> _Decorator:
    """--limit (whose meaning depends on the dataset) and the shared options."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        limit: _Decorator = click.option("--limit", type=click.IntRange(min=1), help=limit_help)
        for option in reversed((limit, *_SHARED_OPTIONS)):
            command = option(command)
        return command

    return decorate


_LOCOMO_DATA: _Decorator = click.option(
    "--data",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar=LOCOMO_ENV,
    help=f"LoCoMo JSON (env {LOCOMO_ENV}); default: ../shared/data/locomo/locomo_public.json "
    "beside the repository.",
)


def _locomo_path(data: Path | None) -> Path:
    path = data or default_locomo_path()
    if path is None:
        raise errors.InvalidInput(
            f"LoCoMo data not found: no {LOCOMO_RELATIVE} above {Path.cwd()} or the installed "
            f"package; pass --data PATH or set {LOCOMO_ENV}"
        )
    return path


@click.command()
@_LOCOMO_DATA
@_common("Only the first N conversations.")
def locomo(data: Path | None, **options: Any) -> None:
    """LoCoMo: one memory per turn, categories 1-4 scored (5, adversarial, left out)."""
    _run(load_locomo(_locomo_path(data)), LOCOMO_CATEGORIES, _Options(**options))


@click.command()
@click.option(
    "--data",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A LongMemEval file (longmemeval_s.json, _m or _oracle).",
)
@_common("Only the first N questions (each has its own haystack).")
def longmemeval(data: Path, **options: Any) -> None:
    """LongMemEval: user turns of each question's haystack; abstention questions skipped."""
    _run(load_longmemeval(data), None, _Options(**options))


@click.command()
@click.option(
    "--data",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A BEIR directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
)
@click.option("--split", default="test", show_default=True, help="The qrels file to score.")
@_common("Only the first N queries (over the whole corpus).")
def beir(data: Path, split: str, **options: Any) -> None:
    """Any BEIR-format directory, one namespace, every judged query."""
    _run(load_beir(data, split=split), None, _Options(**options))


def _run(dataset: Dataset, categories: Mapping[str, str] | None, options: _Options) -> None:
    if options.limit is not None:
        dataset = limit_dataset(dataset, options.limit)
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(f"{dataset.name}: questions", total=None)
        result = run_benchmark(
            dataset,
            embedder=_embedder(options.embedder),
            config=_config_in_effect(),
            categories=categories,
            k_max=options.k_max,
            budget=options.budget,
            resamples=options.resamples,
            progress=lambda done, total: progress.update(task, completed=done, total=total),
            all_policies=options.policies,
            rerank_model=None if options.rerank_model is None else str(options.rerank_model),
            rounds=options.rounds,
            db=options.db,
        )
    _print(result)
    if options.json_path is not None:
        click.echo(f"wrote {write_json(result, options.json_path)}")
    if options.report_dir is not None:
        click.echo(f"wrote {write_report(result, options.report_dir)}")
    if options.save_model is not None:
        if result.learned_model is None:
            raise errors.InvalidInput("no learned model: it needs two or more namespaces")
        options.save_model.write_text(result.learned_model + "\n")
        click.echo(f"wrote {options.save_model}")


def _config_in_effect() -> Config:
    """The settings of ``fivefold --config`` (or the default file), as every other command
    reads them: the benchmark measures what the user configured."""
    root = click.get_current_context().find_root()
    path = config_in_effect((root.obj or {}).get("config_path"))
    return Config() if path is None else load_config(path)


def _embedder(name: str) -> Embedder | None:
    """None lets ``Memory.open`` load its default model."""
    if name == "hashing":
        from fivefold.embed import HashingEmbedder

        return HashingEmbedder()
    return None


def _print(result: BenchResult) -> None:
    setup, timings = result.setup, result.timings
    click.echo(
        f"{setup.dataset}: {setup.docs:,} docs, {setup.questions:,} questions, "
        f"embedder {setup.embedder}; all figures x100; Δ = system minus fivefold, "
        "* = p < 0.05 (paired bootstrap)\n"
    )
    sig = significance_label(setup.k_max)
    recall = {s.name: s.overall.get(sig) for s in result.systems}
    for table in (
        summary_table(result),
        category_table(result),
        halves_table(result),
        change_table(result),
        baselines_table(result.optimized_vs, recall, sig),
        policy_table(result.policies, sig),
        plan_latency_table(result.policies),
    ):
        if table:
            click.echo(table + "\n")
    click.echo(
        f"ingest {timings['ingest_s']:.1f} s, questions {timings['queries_s']:.1f} s, "
        f"scoring {timings['scoring_s']:.1f} s, total {timings['total_s']:.1f} s"
    )


@click.command()
@_LOCOMO_DATA
@click.option("--limit", type=click.IntRange(min=2), help="Only the first N conversations.")
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--embedder", type=click.Choice(["minilm", "hashing"]), default="minilm", show_default=True
)
@click.option(
    "--optimizer",
    type=click.Choice(["rule", "learned"]),
    default="rule",
    show_default=True,
    help="Whose results to fit: the rules' (COEFFICIENTS) or learned fusion's, each "
    "conversation ranked by a model fit on the others (LEARNED_COEFFICIENTS).",
)
def calibration(
    data: Path | None, limit: int | None, k: int, embedder: str, optimizer: str
) -> None:
    """Fit the hit confidence on LoCoMo and report it held out (reliability, ECE, top hits)."""
    from fivefold.bench import calibration as calibration_module

    dataset = load_locomo(_locomo_path(data))
    if limit is not None:
        dataset = limit_dataset(dataset, limit)
    given = _config_in_effect()
    config = replace(given, optimizer=replace(given.optimizer, mode=OptimizerMode(optimizer)))
    learned = optimizer == "learned"
    with Memory.open(":memory:", embedder=_embedder(embedder), config=config) as mem:
        result = calibration_module.run(dataset, mem, k=k, learned=learned)
    table_text, ece = calibration_module.reliability(result)
    click.echo(f"held-out reliability (top {k} hits; fit on one half of the conversations)")
    click.echo(table_text + f"\nexpected calibration error {ece:.4f}\n")
    click.echo("held-out confidence of each question's top hit")
    click.echo(calibration_module.top_hit_table(result) + "\n")
    click.echo(calibration_module.coefficients_line(result, learned=learned))


COMMANDS: tuple[click.Command, ...] = (locomo, longmemeval, beir, calibration)
