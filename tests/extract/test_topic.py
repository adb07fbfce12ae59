"""``same_topic``: whether a newer statement may be the change of an older one the frame rules
could not read. The sentences are written for these tests."""

from __future__ import annotations

import pytest

from fivefold.extract.topic import owned_apart, same_topic, topic


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My chess rating is 1480.", "Chess rating 1530 after the autumn league."),
        ("The orchard survey counted 212 trees.", "After the storm the orchard has 198 trees."),
        ("Ines runs the Friday book club.", "I run the Friday book club."),
        ("I study to Baroque lute music.", "Study music is film scores."),
        # plural weekdays are times, not names the two would hold apart
        ("The choir rehearses Mondays at 7 pm.", "Choir rehearsal is Thursdays at 6:30."),
        # the names differ as the value, after the copula
        ("Sam's piano teacher is Mrs. Alder.", "Sam's piano teacher is Mr. Brandt."),
        ("My allotment plot is P7 by the gate.", "I'm on allotment plot Q12 since May."),
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
        ("Tobi's piano teacher is Mrs. Alder.", "Mia's piano teacher is Mr. Brandt."),
        ("My older kid's school is Hillcrest.", "My younger kid's school is Oakwood."),
        ("I'm meeting Ana for the budget review.", "I'm meeting Tom for the budget review."),
    ],
)
def test_coexisting_facts_are_not_the_same_topic(old: str, new: str) -> None:
    assert not same_topic(old, new)


def test_one_thing_of_two_owners_is_owned_apart() -> None:
    assert owned_apart("My samples are in box F5.", "Aisha's samples are in box F2.")
    assert owned_apart("Ines's locker is 31.", "Marek's locker is 44.")
    assert not owned_apart("My badge is 4410.", "Marek's locker is 44.")  # not one thing
    assert not owned_apart("At St Anne's my manager is Lou.", "My manager is Kit.")


def test_what_a_statement_speaks_of() -> None:
    found = topic("Marek's bike locker at the Leeds office is number 44 now.")
    assert found.owned == {("marek", "bike")}
    assert {"marek", "leeds"} <= found.names
    assert {"bike", "locker", "office"} <= found.words
    assert not {"now", "44"} & found.words
    assert not found.first_person
    assert topic("I moved my desk.").first_person
    assert topic("I moved my desk.").owned == {("i", "desk")}
