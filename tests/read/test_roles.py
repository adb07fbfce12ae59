"""People named through the user: "my sister", "my former manager's team". The question is
read with the holder's name, found in the user's own memories, so memories that name the
holder and never say "my sister" answer it. The sentences are written for these tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pytest

import fivefold
from fivefold import Memory
from fivefold.read.roles import (
    MAX_ROLES,
    Holder,
    choose,
    holders_in,
    roles,
    superiors_in,
    user_names,
    with_names,
)
from fivefold.types import Scope

T0 = datetime(2026, 1, 5, tzinfo=UTC)
T1 = datetime(2026, 4, 2, tzinfo=UTC)
FILLER = [
    "I water the balcony tomatoes every second evening.",
    "Our quarterly planning doc lives in the shared drive.",
    "The coffee machine on the third floor needs descaling monthly.",
    "My sister's birthday is in May; she likes orchids.",
    "I live in a flat in Majorna with a view of the harbour cranes.",
]
WHO = "My older sister Karin is a veterinarian."
ANSWER = "Staying two nights at Karin's flat in Möllevången, Malmö."


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where does my sister live?", [("sister", False)]),
        ("Where does my climbing partner work?", [("climbing partner", False)]),
        ("Who is my former manager's boss now?", [("manager", True)]),
        ("Where does my wife's sister live?", [("wife", False)]),
        ("How old is my niece?", [("niece", False)]),
        # Asks who holds the role: the holder's name would only pull up the memory it came from.
        ("Who is my manager?", []),
        # About a check-up, not the dentist; about an address, not a person.
        ("When is my dentist check-up?", []),
        ("What's my email address?", []),
        ("Where does Karin live?", []),
    ],
)
def test_the_roles_a_question_asks_about(question: str, expected: list[tuple[str, bool]]) -> None:
    assert [(r.words, r.earlier) for r in roles(question)] == expected


@pytest.mark.parametrize(
    ("text", "role", "names"),
    [
        (WHO, "sister", ["Karin"]),
        (
            "My partner is Elias Nordin; we've lived together since 2024.",
            "partner",
            ["Elias Nordin"],
        ),
        (
            "Sanna Lund is my climbing partner; we met at a competition.",
            "climbing partner",
            ["Sanna Lund"],
        ),
        (
            "Fatima Siddiqui started as coordinator today, so she's my manager now.",
            "manager",
            ["Fatima Siddiqui"],
        ),
        (
            "Greg Novak retires in June and he has been my manager for six years.",
            "manager",
            ["Greg Novak"],
        ),
        ("My family doctor is Dr. Mensah at the Bloor clinic.", "doctor", ["Dr. Mensah"]),
        ("My sister's birthday is in May; she likes orchids.", "sister", []),
        ("The sister ward is 7 East.", "sister", []),
    ],
)
def test_who_a_memory_says_holds_a_role(text: str, role: str, names: list[str]) -> None:
    assert [name for name, ended in holders_in(text, role) if not ended] == names


@pytest.mark.parametrize(
    ("text", "user", "names"),
    [
        ("Kofi's manager is Greg Novak, the coordinator.", "kofi", ["Greg Novak"]),
        ("Inês's sister Beatriz lives in Benfica.", "ines", ["Beatriz"]),  # accents folded
        ("The user's manager is Greg Novak.", "u_81", ["Greg Novak"]),
        # Another person's, and a user id that is no name
        ("Abena's sister Efua lives in Brampton.", "kofi", []),
        ("U_81's manager is Greg Novak.", "u_81", []),
    ],
)
def test_a_memory_may_name_the_user_in_the_third_person(
    text: str, user: str, names: list[str]
) -> None:
    role = "sister" if "sister" in text else "manager"
    selves = user_names(Scope(user_id=user))
    assert [name for name, _ in holders_in(text, role, selves)] == names


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Helena and I keep a mentoring coffee though she's no longer my manager.", ["Helena"]),
        ("My former manager Helena Ström now leads Data.", ["Helena Ström"]),
        ("Greg Novak, my previous manager, left for the satellite site.", ["Greg Novak"]),
        ("My manager is Jonas Weber.", []),
    ],
)
def test_who_a_memory_says_held_a_role_no_longer(text: str, names: list[str]) -> None:
    assert [name for name, ended in holders_in(text, "manager") if ended] == names


def test_the_holder_a_question_means() -> None:
    (current,) = roles("Where does my manager work?")
    (former,) = roles("Where does my former manager work?")
    helena = Holder("Helena", 1, T0, current=False)
    jonas = Holder("Jonas", 2, T1, current=True)
    assert choose(current, [helena, jonas]) == jonas
    assert choose(former, [helena, jonas]) == helena
    assert choose(former, [jonas]) is None  # no other holder known: nothing to say
    # A statement superseded since does not name the current holder, even if it is newer.
    stale = Holder("Helena", 3, T1, current=False)
    assert choose(current, [stale, Holder("Jonas", 2, T0, current=True)]) == Holder(
        "Jonas", 2, T0, current=True
    )
    # Said since to hold it no longer: no current holder is known, and she is the former one.
    left = Holder("Helena", 4, T1, current=True, ended=True)
    full = Holder("Helena Ström", 1, T0, current=True)
    assert choose(current, [full, left]) is None  # one person, by her first name
    assert choose(former, [full, left]) == replace(left, name="Helena Ström")
    dr = [Holder("Dr. Mensah", 5, T0, current=True), Holder("Dr. Liang", 6, T1, current=True)]
    assert choose(current, dr) == dr[1]
    assert choose(former, dr) == dr[0]


def test_the_name_follows_the_role() -> None:
    question = "Where does my wife's sister live?"
    assert with_names(question, [(roles(question)[0].end, "Abena")]) == (
        "Where does my wife Abena's sister live?"
    )
    question = "Who is my manager's boss's boss?"
    (role,) = roles(question)
    named = [(role.end, "Fatima"), (role.up[0], "Robert Tremblay"), (role.up[1], "Anita")]
    assert with_names(question, named) == (
        "Who is my manager Fatima's boss Robert Tremblay's boss Anita?"
    )


@pytest.mark.parametrize(
    ("question", "steps"),
    [
        ("Who does my manager report to?", 1),
        ("Who is my former manager's boss now?", 1),
        ("Who is my manager's boss's boss?", 2),
        ("Who is my manager's boss's boss's boss's boss?", 2),  # bounded: each costs reads
        ("What does my former manager's team work on?", 0),
        ("Where does my wife's sister live?", 0),
    ],
)
def test_the_steps_up_a_question_asks_for(question: str, steps: int) -> None:
    (role,) = roles(question)
    assert len(role.up) == steps


@pytest.mark.parametrize(
    ("text", "person", "names"),
    [
        (
            "Fatima reports to Robert Tremblay, the Director.",
            "Fatima Siddiqui",
            ["Robert Tremblay"],
        ),
        ("Tremblay reports to Dr. Anita Sharma, the VP.", "Robert Tremblay", ["Dr. Anita Sharma"]),
        ("At the new site Greg will report to Dr. Yusuf Ali.", "Greg Novak", ["Dr. Yusuf Ali"]),
        ("Helena's new boss is Oskar Dahl.", "Helena Ström", ["Oskar Dahl"]),
        ("Oskar Dahl is Helena's manager.", "Helena", ["Oskar Dahl"]),
        # Someone answering to the person is no superior of theirs.
        ("Kofi Asante reports to Fatima Siddiqui.", "Fatima Siddiqui", []),
        ("Greg reports to Yusuf Ali.", "Fatima Siddiqui", []),
    ],
)
def test_who_a_memory_says_a_person_answers_to(text: str, person: str, names: list[str]) -> None:
    assert superiors_in(text, person) == names


@pytest.fixture
def memory(store_url: str, minilm: fivefold.MiniLMEmbedder) -> Iterator[Memory]:
    with Memory.open(store_url, embedder=minilm) as mem:
        yield mem


def _write(memory: Memory, user: str, texts: list[str]) -> list[int]:
    items = [{"content": t, "created_at": T0, "user_id": user} for t in texts]
    return [r.id for r in memory.remember_many(items)]


def test_a_question_through_the_user_finds_what_names_the_holder(memory: Memory) -> None:
    *_, who, answer = _write(memory, "maya", [*FILLER, WHO, ANSWER])
    question = "Where does my sister live?"
    result = memory.recall(question, user_id="maya", k=3)
    assert answer in [h.memory.id for h in result.hits[:2]]
    assert f"my sister: Karin (memory {who})" in result.plan.reasons
    assert result.query.original == question  # the caller's words, the name only in the focus
    assert "Karin" in result.query.focus


def test_another_users_memories_never_name_the_holder(memory: Memory) -> None:
    _write(memory, "maya", [*FILLER, WHO, ANSWER])
    _write(memory, "ines", ["I visit my grandmother on Sundays."])
    result = memory.recall("Where does my sister live?", user_id="ines", k=3)
    assert not any(r.startswith("my sister") for r in result.plan.reasons)
    assert "Karin" not in result.query.focus


def test_a_former_holder_is_the_one_before_the_current(memory: Memory) -> None:
    _write(memory, "maya", [*FILLER, "My manager is Helena Ström; she runs Platform."])
    _, helena_team = memory.remember_many(
        [
            {"content": t, "created_at": T1, "user_id": "maya"}
            for t in (
                "Since the reorg my manager is Jonas Weber.",
                "Helena's new team, Data, works on the forecasting model.",
            )
        ]
    )
    result = memory.recall("What does my former manager's team work on?", user_id="maya", k=3)
    assert any(r.startswith("my former manager: Helena Ström") for r in result.plan.reasons)
    assert helena_team.id in [h.memory.id for h in result.hits[:2]]
    now = memory.recall("Where does my manager sit?", user_id="maya", k=3)
    assert any(r.startswith("my manager: Jonas Weber") for r in now.plan.reasons)


def test_a_question_naming_many_roles_resolves_a_few(memory: Memory) -> None:
    """Each role costs store reads: a pasted paragraph of them does not multiply them."""
    _write(memory, "maya", [*FILLER, WHO, ANSWER])
    question = " ".join(["Where does my sister live?"] * 50)
    result = memory.recall(question, user_id="maya", k=3)
    assert sum(r.startswith("my sister") for r in result.plan.reasons) == MAX_ROLES


def test_a_holder_the_question_names_already_is_not_added(memory: Memory) -> None:
    _write(memory, "maya", [*FILLER, WHO, ANSWER])
    result = memory.recall("Where does my sister Karin live?", user_id="maya", k=3)
    assert not any(r.startswith("my sister") for r in result.plan.reasons)
    assert result.query.focus.count("Karin") == 1


def test_another_speakers_words_name_no_holder_of_the_users(memory: Memory) -> None:
    """In a conversation, the other speaker's "my sister" is not the user's."""
    memory.remember_messages(
        [
            {"role": "user", "content": "My older sister Karin is a veterinarian."},
            {"role": "assistant", "content": "My older sister Ines is a pilot."},
        ],
        session_id="s1",
        user_id="maya",
        at=T0,
    )
    result = memory.recall("Where does my sister live?", user_id="maya", k=3)
    assert any(r.startswith("my sister: Karin") for r in result.plan.reasons)


def test_a_question_climbs_from_the_holder_to_whom_they_answer(memory: Memory) -> None:
    """ "Who does my manager report to?" is answered by a memory that never says "my"."""
    *_, who, above, top = _write(
        memory,
        "kofi",
        [
            *FILLER,
            "Fatima Siddiqui started as coordinator today, so she's my manager now.",
            "Fatima reports to Robert Tremblay, the Director of Pharmacy.",
            "Tremblay reports to Dr. Anita Sharma, the VP of Clinical Services.",
        ],
    )
    result = memory.recall("Who does my manager report to?", user_id="kofi", k=3)
    assert f"my manager's boss: Robert Tremblay (memory {above})" in result.plan.reasons
    assert above in [h.memory.id for h in result.hits[:2]]
    result = memory.recall("Who is my manager's boss's boss?", user_id="kofi", k=3)
    assert f"my manager's boss's boss: Dr. Anita Sharma (memory {top})" in result.plan.reasons
    assert top in [h.memory.id for h in result.hits[:2]]
    assert who != above
