"""Frames and supersession: what a memory states, and whether a newer memory replaces an older
one. The sentences are written for these tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from fivefold.extract.frames import (
    Frame,
    Statement,
    frames,
    slot_keys,
    supersedes,
)
from fivefold.extract.values import same_value
from fivefold.text import update_cue

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _frame(text: str, subject: str, attribute: str) -> Frame | None:
    return next(
        (f for f in frames(text) if f.subject == subject and f.attribute == attribute), None
    )


def _pair(old: str, new: str) -> tuple[Statement, Statement]:
    return (
        Statement(old, frames(old), T0),
        Statement(new, frames(new), T0 + timedelta(days=30)),
    )


FAMILIES = [
    # (text, subject, attribute, value)
    ("I live in Porto.", "user", "residence", "porto"),
    ("We moved to Bristol in the spring.", "user", "residence", "bristol in spring"),
    ("My brother Tomasz lives in Gdansk.", "tomasz", "residence", "gdansk"),
    ("My parents live in a cottage in Kerry.", "parents", "residence", "cottage in kerry"),
    ("I work at Quillfeather as a data analyst.", "user", "employer", "quillfeather"),
    ("Started at Brightloop on Tuesday.", "user", "employer", "brightloop"),
    ("Mum has retired.", "mother", "employer", "retired"),
    ("My manager is Ingrid Solberg.", "user", "manager", "ingrid solberg"),
    ("I now report to Omar Haddad.", "user", "manager", "omar haddad"),
    ("Tom's manager at Pinecrest is Wei Chen.", "tom", "manager", "wei chen"),
    ("I'm on the payments team.", "user", "team", "payments"),
    ("Priyanka transferred to the search team.", "priyanka", "team", "search"),
    ("My title is Staff Engineer.", "user", "role", "staff engineer"),
    ("Got promoted to Principal Designer!", "user", "role", "principal designer"),
    ("Alice's badge number is 55821.", "alice", "badge number", "55821"),
    ("My phone number is +44 7700 900123.", "user", "phone number", "447700900123"),
    ("My work email is kim@orbit.example.", "user", "email", "kim@orbit.example"),
    ("My locker is number 14.", "user", "locker", "14"),
    ("Our Wi-Fi password is tulip-42.", "user", "password", "tulip-42"),
    ("The search API rate limit is 200 requests per second.", "search api", "rate limit",
     "200 requests second"),
    ("Rent on the studio is 950 euros a month.", "user", "rent", "950 euros month"),
    ("The team has 12 engineers.", "team", "headcount", "12"),
    ("The launch is on 3 March.", "launch", "schedule", "3 march"),
    ("The launch slipped two weeks.", "launch", "schedule", "moved two week"),
    ("Standup moved to Thursday at 10 am.", "standup", "schedule", "thursday 10:00"),
    ("My dentist appointment is 4 June at 2 pm.", "dentist appointment", "schedule",
     "4 june 14:00"),
    ("Everything runs on Postgres 16 now.", "postgres", "version", "16"),
    ("We upgraded to Python 3.12.", "python", "version", "3.12"),
    ("I use Neovim now.", "user", "editor", "neovim"),
    ("I'm vegan these days.", "user", "diet", "vegan"),
    ("I prefer window seats on long flights.", "user", "seat", "window"),
    ("The data migration is on hold.", "data migration", "status", "on hold"),
    ("The spare key is in the blue drawer.", "spare key", "location", "blue drawer"),
    ("The billing service is owned by the Ledger team.", "billing service", "owner", "ledger"),
    ("Omar is on call for the database this week.", "on call database", "owner", "omar"),
    ("We bank with Northwind Savings.", "user", "bank", "northwind savings"),
    ("My dentist is Dr. Okafor on Mill Lane.", "user", "dentist", "dr okafor"),
    ("I drive a blue Toyota Yaris.", "user", "car", "blue toyota yaris"),
    ("My phone is a Pixel 9.", "user", "phone model", "pixel 9"),
    ("Mara goes by Mara Berg now.", "mara", "name", "mara berg"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "subject", "attribute", "value"), FAMILIES)
def test_frames_of_each_attribute_family(
    text: str, subject: str, attribute: str, value: str
) -> None:
    found = _frame(text, subject, attribute)
    assert found is not None, frames(text)
    assert found.value == value


SUBJECTS = [
    # (text, subject, attribute)
    ("My badge number is 771.", "user", "badge number"),
    ("Our rent is 1,200 euros a month.", "user", "rent"),
    ("Alice's badge number is 772.", "alice", "badge number"),
    ("Tom's team is Growth.", "tom", "team"),
    ("Daniel's mum lives in Leeds.", "daniel mother", "residence"),
    ("Lucia's brother Marco lives in Turin.", "marco", "residence"),
    ("My sister Ada lives in Oslo.", "ada", "residence"),
    ("The Leeds office is at 4 Park Row.", "leeds office", "location"),
    ("The prod cluster runs in eu-west-2.", "prod cluster", "location"),
    ("Kestrel is on hold.", "kestrel", "status"),
]


@pytest.mark.parametrize(("text", "subject", "attribute"), SUBJECTS)
def test_who_a_frame_is_about(text: str, subject: str, attribute: str) -> None:
    assert _frame(text, subject, attribute) is not None, frames(text)


NOTHING = [
    "Thanks, that sounds great!",
    "The flat has a tiny balcony that fits one chair.",
    "Packing up the old house took three weekends.",
    "Utrecht is much colder than Lisbon.",
    "Sunday: the dog's first full day at home.",
    "Every unit is on the new pumps now.",
    "",
]


@pytest.mark.parametrize("text", NOTHING)
def test_statements_the_rules_do_not_know_give_no_frames(text: str) -> None:
    assert frames(text) == ()


ADDITIVE = [
    ("I love Thai food.", "likes"),
    ("I also lead the hiring revamp.", "leads"),
    ("I'm learning Portuguese.", "learning"),
    ("We adopted a second cat, Miso.", "pets"),
]


@pytest.mark.parametrize(("text", "attribute"), ADDITIVE)
def test_additive_attributes_hold_many_values(text: str, attribute: str) -> None:
    found = _frame(text, "user", attribute)
    assert found is not None, frames(text)
    assert not found.single
    assert slot_keys(frames(text)) == ()  # no switching cue: nothing to supersede


def test_a_marker_of_addition_makes_a_frame_additive() -> None:
    found = _frame("The ingest API also runs in us-east-1.", "ingest api", "location")
    assert found is not None
    assert not found.single


CUES = [
    ("We moved to Utrecht.", "moved"),
    ("From now on standup is at ten.", "from now on"),
    ("I no longer eat meat.", "no longer"),
    ("I drink oat milk instead of dairy.", "instead of"),
    ("Security reissued my badge.", "reissued"),
    ("The launch slipped again.", "slipped"),
    ("The deadline changed to Friday.", "changed to"),
    ("I use Helix now.", "now"),
    ("I like tea.", None),
    ("My badge number is 40417.", None),
]


@pytest.mark.parametrize(("text", "cue"), CUES)
def test_update_cue(text: str, cue: str | None) -> None:
    assert update_cue(text) == cue


def test_slot_keys_name_subject_and_attribute_and_each_word_of_a_long_subject() -> None:
    keys = slot_keys(frames("Platform reliability standup is at 9:30 every day."))
    assert "platform reliability standup|schedule" in keys
    assert "standup|schedule" in keys
    assert slot_keys(frames("My badge number is 40417.")) == ("user|badge number",)
    assert "user|eats" in slot_keys(frames("I no longer eat meat."))


SUPERSEDES = [
    # (old, new)
    ("I live in Lisbon.", "We moved to Utrecht in May."),
    ("I work at Finchley Labs.", "Started at Oakridge Systems on Monday."),
    ("My manager is Ingrid Solberg.", "After the reorg I report to Omar Haddad."),
    ("I'm on the payments team.", "I've been moved to the identity team."),
    ("My title is Engineer II.", "Got promoted to Senior Engineer!"),
    ("My badge number is 1234.", "Security reissued my badge as 9876."),
    ("My mobile number is 07700 900111.", "New number: 07700 900222."),
    ("Our Wi-Fi password is tulip-42.", "Our Wi-Fi password is now maple-77."),
    ("The search API rate limit is 200 requests per second.",
     "We raised the search API limit to 500 requests per second."),
    ("Rent on the studio is 950 euros a month.", "The landlord raised the rent to 1,010 euros."),
    ("The launch is on 3 March.", "The launch slipped two weeks."),
    ("The launch is on 3 March.", "The launch moved to 17 March."),
    ("Standup is at 9:30.", "From now on standup is at 10:00."),
    ("Our services run on Python 3.11.", "Everything is on Python 3.12 now."),
    ("I use VS Code for everything.", "I've switched to Neovim."),
    ("I take my coffee black.", "I drink flat whites instead of black coffee now."),
    ("I'm vegetarian.", "I'm vegan now."),
    ("The data migration is on hold.", "The data migration is done."),
    ("The spare key is with our neighbour Ana.", "The spare key is in the lockbox now."),
    ("The billing service is owned by the Ledger team.",
     "The Atlas team owns the billing service."),
    ("We bank with Northwind Savings.", "Moved my current account to Harbour Bank."),
    ("My dentist is Dr. Okafor.", "New dentist: Dr. Lindqvist."),
    ("I drive a silver Ford Focus.", "Traded the Focus in for a Kia Niro."),
    ("My sister Mara Hoffmann lives in Hamburg.", "Mara got married and goes by Mara Berg now."),
    ("I drink tea every morning.", "I switched from tea to coffee."),
    ("I eat meat.", "I no longer eat meat."),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new"), SUPERSEDES)
def test_a_changed_fact_supersedes_the_old_one(old: str, new: str) -> None:
    earlier, later = _pair(old, new)
    assert set(slot_keys(later.frames)), later.frames
    found = supersedes(earlier, later)
    assert found is not None, (earlier.frames, later.frames)
    assert found.reason.startswith("same subject")


KEPT = [
    # (old, new): both stay current
    ("Alice's badge number is 1234.", "Bob's badge number is 5678."),
    ("Pieter's desk extension is 4410.", "Noor's desk extension is 4427."),
    ("I like tea.", "I like coffee."),
    ("I lead the search rewrite.", "I also lead the billing revamp."),
    ("I'm learning Dutch.", "I also started learning Rust."),
    ("My personal email is ana@home.example.", "My work email is ana@corp.example."),
    ("Tom's team is Growth.", "Ana's team is Growth."),
    ("The ingest service pins Kafka client 3.7.", "The billing service pins Kafka client 3.4."),
    ("Dutch class is on Monday evenings.", "Cello lesson is on Wednesday evenings."),
    ("Mara's birthday is 14 November.", "Jonas's birthday is 2 May."),
    ("Zara's teacher is Miss Clarke.", "Zara's swimming teacher is Kelly."),
    ("The ingest API runs in eu-central-1.", "The ingest API also runs in us-east-2."),
    ("Retro is every second Thursday at 15:00.",
     "There's a one-off planning session on 8 October at 15:00."),
    ("I live in Lisbon.", "I live in Lisbon, near the river."),  # restated
    ("The launch is on 3 March.", "The launch is still on 3 March."),  # restated
    ("My badge number is 1234.", "My badge number is 1234."),  # repeated
    ("Jonas lives in Bremen.", "Jonas's mum lives in Leeds."),  # a relative is not the person
]  # fmt: skip


@pytest.mark.parametrize(("old", "new"), KEPT)
def test_facts_that_only_look_alike_both_stay(old: str, new: str) -> None:
    earlier, later = _pair(old, new)
    assert supersedes(earlier, later) is None, (earlier.frames, later.frames)


def test_the_reason_names_the_slot_the_values_and_the_cue() -> None:
    earlier, later = _pair("I live in Lisbon.", "We moved to Utrecht.")
    found = supersedes(earlier, later)
    assert found is not None
    assert "(user, residence)" in found.reason
    assert "utrecht" in found.reason
    assert "lisbon" in found.reason
    assert "'moved'" in found.reason


def test_an_additive_attribute_needs_a_cue_that_names_the_old_value() -> None:
    earlier, later = _pair("I drink tea every morning.", "I switched to coffee from juice.")
    assert supersedes(earlier, later) is None


VALUES = [
    # (a, b, same)
    ("17 november", "17 november 10:00", True),
    ("3 september 10:00", "10 september", False),
    ("1150 euros month", "1150 eur month", True),
    ("eu west 1", "eu central 1", False),
    ("pieter", "pieter de wit", True),
    ("dr bakker", "dr yilmaz", False),
    ("lena@a.example", "lena@b.example", False),
]


@pytest.mark.parametrize(("a", "b", "same"), VALUES)
def test_same_value(a: str, b: str, same: bool) -> None:
    assert same_value(a, b, counted=a[0].isdigit()) is same
