"""The speaker of a memory: given, or read from a leading "Name: text"."""

from __future__ import annotations

import pytest

import fivefold
from fivefold.config import Config, FusionConfig, OptimizerConfig
from fivefold.extract.speaker import infer_speaker
from fivefold.types import OptimizerMode


@pytest.mark.parametrize(
    ("content", "speaker"),
    [
        ("Caroline: I went to the support group.", "Caroline"),
        ("Mary Ann Lee: see you at 5", "Mary Ann Lee"),
        ("Note: buy milk", None),
        ("Update: the key rotated", None),
        ("caroline: lower case is not a name", None),
        ("I prefer dark roast: always", None),
        ("Time: 10:30", "Time"),
        ("Caroline:no space", None),
        ("", None),
        ("Élodie: I moved to Lyon", "Élodie"),
        ("Andrzej Łukasiewicz: see you at five", "Andrzej Łukasiewicz"),
        ("Андрей Петров: увидимся в пять", None),  # other scripts: "Важно: ..." is no speaker
        ("Ζωή: γεια σου", None),
        ("андрей: lower case is not a name", None),
        ("北京: 很好", None),
    ],
)
def test_infer_speaker(content: str, speaker: str | None) -> None:
    assert infer_speaker(content) == speaker


def test_given_speaker_wins_and_reads_back(hashing_mem: fivefold.Memory) -> None:
    record = hashing_mem.remember("Caroline: I went hiking", speaker="  Melanie ")
    assert record.speaker == "Melanie"
    assert hashing_mem.get(record.id).speaker == "Melanie"
    assert hashing_mem.remember("Caroline: I went hiking").speaker == "Caroline"
    assert hashing_mem.remember("hiking is fun").speaker is None


@pytest.mark.parametrize("bad", [3, ["Caroline"], "x" * 10_000])
def test_a_bad_speaker_is_refused(hashing_mem: fivefold.Memory, bad: object) -> None:
    with pytest.raises(fivefold.InvalidInput, match="speaker"):
        hashing_mem.remember("hello", speaker=bad)  # type: ignore[arg-type]
    assert hashing_mem.stats().memories == 0


def test_the_speaker_boost_prefers_the_named_persons_turns() -> None:
    def top(boost: float) -> str:
        config = Config(
            optimizer=OptimizerConfig(mode=OptimizerMode.OFF),
            fusion=FusionConfig(speaker_boost=boost),
        )
        with fivefold.Memory.open(
            ":memory:", embedder=fivefold.HashingEmbedder(), config=config
        ) as mem:
            mem.remember_many(
                [
                    {"content": "Melanie: Caroline loves pottery and pottery classes"},
                    {"content": "Caroline: I tried pottery once"},
                ]
            )
            return mem.recall("what does Caroline say about pottery?", k=2).hits[0].memory.content

    assert top(0.0).startswith("Melanie")
    assert top(1.0).startswith("Caroline")
