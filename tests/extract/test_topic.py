"""``same_topic``: whether a newer statement may be the change of an older one the frame rules
could not read. The sentences are written for these tests."""

from __future__ import annotations

import pytest

from fivefold.extract.topic import same_topic, topic


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My chess rating is 1480.", "Chess rating 1530 after the autumn league."),
        ("The orchard survey counted 212 trees.", "After the storm the orchard has 198 trees."),
        ("Ines runs the Friday book club.", "I run the Friday book club."),
        ("I study to Baroque lute music.", "Study music is film scores."),
    ],
)
def test_a_change_in_other_words_is_the_same_topic(old: str, new: str) -> None:
    assert same_topic(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The north field has 40 hives.", "The south field has 25 hives."),  # qualified apart
        ("Ines runs the Friday book club.", "Ines also runs the chess club."),  # adds
        ("Ines's locker is 31.", "Marek's locker is 44."),  # two owners
        ("My locker is 31.", "Marek's locker is 44."),  # mine and someone else's
        ("Ines visits Porto on 3 May.", "Marek visits Porto on 9 May."),  # two people
        ("My work phone is a Fairphone.", "My home phone is a Nokia."),  # two contexts
        ("My chess rating is 1480.", "The hives produced 30 kg of honey."),  # nothing shared
    ],
)
def test_coexisting_facts_are_not_the_same_topic(old: str, new: str) -> None:
    assert not same_topic(old, new)


def test_what_a_statement_speaks_of() -> None:
    found = topic("Marek's bike locker at the Leeds office is number 44 now.")
    assert found.owners == {"marek"}
    assert {"marek", "leeds"} <= found.names
    assert {"bike", "locker", "office"} <= found.words
    assert "now" not in found.words and "44" not in found.words
    assert not found.first_person
    assert topic("I moved my desk.").first_person
