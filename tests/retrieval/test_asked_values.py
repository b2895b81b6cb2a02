"""The kind of value a question asks for, and whether a memory states one (``retrieval/asked_values.py``)."""

from __future__ import annotations

import pytest

from stratamem.retrieval.asked_values import Asked, ValueKind, asked_value, states_value

K = ValueKind


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("What's Nadia's salary at Lumen Freight?", {K.MONEY}),
        ("How much does each session with Marisol cost?", {K.MONEY}),
        ("How much are termly subs?", {K.MONEY}),
        ("What does the home care agency charge per hour?", {K.MONEY}),
        ("What did she pay for her road bike?", {K.MONEY}),
        ("What's the price for advertising in the program?", {K.MONEY}),
        ("How old is Ruth's husband?", {K.AGE}),
        ("What year did Bronwyn start the business?", {K.YEAR}),
        ("What time does the railway museum open?", {K.CLOCK}),
        ("What's Gideon's mobile number?", {K.PHONE}),
        ("What\u2019s Gideon\u2019s mobile number?", {K.PHONE}),  # typographic apostrophes
        ("What number do clinicians dial when they need IT urgently?", {K.PHONE}),
        ("What is Hélène Brun's email address?", {K.EMAIL}),
        ("What's the registration number on the Skoda?", {K.CODE}),
        ("What's the lockbox code?", {K.CODE}),
        ("What is Callum's surname?", {K.SURNAME}),
        ("and what time is the morning huddle?", {K.CLOCK}),
        ("How much is the wedding budget and how much have we paid the caterers?", {K.MONEY}),
    ],
)
def test_the_kind_a_question_asks_for(question: str, kinds: set[ValueKind]) -> None:
    asked = asked_value(question)
    assert asked is not None and set(asked.kinds) == kinds


@pytest.mark.parametrize(
    "question",
    [
        "When is the open regatta and what does it cost to enter?",  # one clause asks a date
        "Who has the code to get into basement storage?",  # asks a person
        "Which test framework should I use for Marco's code?",  # source code, not a code
        "What time zone is Marco in?",
        "What's the number one reason people contact us?",
        "What kind of mobile does Walter have?",  # a device
        "Can I put emojis in an email reply?",
        "phone number validation rules",  # not a question
        "How many times has Joanna been hiking?",  # counts are tallied across conversation turns
        "How long did it take Jon to open his studio?",
        "How much metformin is Dale taking these days?",  # a dose, not money
        "What did Mel and her kids make at the pottery workshop?",
        "What royalty percentage does Alamy pay her?",  # a share, not an amount
        "Who do I pay rent to, and how?",
        "what does Walter do to pay the bills?",
    ],
)
def test_questions_the_check_leaves_alone(question: str) -> None:
    assert asked_value(question) is None


@pytest.mark.parametrize(
    ("kind", "content"),
    [
        (K.MONEY, "Kettle Cove's revised number is $52,300."),
        (K.MONEY, "Jars of honey go for £7.50 this season"),
        (K.MONEY, "Adult tickets are 14 pounds to cover the hall hire"),
        (K.MONEY, "Kenji is saving for a flat, with a budget of 60 million yen"),
        (K.MONEY, "Rent is 1,450 a month, paid to the landlord"),
        (K.MONEY, "Entry to the museum is free"),
        (K.MONEY, "The total budget is €65k"),
        (K.AGE, "Her daughter Amara is 9 and swims on Saturdays"),
        (K.AGE, "Her mother is in her eighties"),
        (K.YEAR, "Family car is a 2018 Skoda Octavia"),
        (K.YEAR, "John started surfing five years ago"),
        (K.CLOCK, "Stand-up is at 9:15 every weekday"),
        (K.CLOCK, "The club meets on Sunday mornings at 8am"),
        (K.PHONE, "Shopfitter is Brunel Interiors; contact Marcus on 07700 900412."),
        (K.PHONE, "For urgent IT issues clinicians dial extension 4444"),
        (K.EMAIL, "Customers write to help@loomwell.co"),
        (K.CODE, "Building permit BP-24-0613 approved March 22."),
        (K.CODE, "The lockbox code is 4471"),
    ],
)
def test_a_memory_that_states_the_value(kind: ValueKind, content: str) -> None:
    assert states_value(Asked(frozenset({kind})), content)


@pytest.mark.parametrize(
    ("kind", "content"),
    [
        (K.MONEY, "Nadia started in June as a junior backend developer at Lumen Freight"),
        (K.MONEY, "Training for the triathlon on August 24: 750m swim, 20km bike, 5km run."),
        (K.MONEY, "The gluten-free bread is on shelf 3"),
        (K.AGE, "User's name is Tomasz"),
        (K.YEAR, "Bronwyn runs a one-person piano tuning business called Tidewell Pianos."),
        (K.CLOCK, "Bread is baked in-house every morning by the pastry chef, Ines."),
        (K.PHONE, "Ruth's mentor is charge nurse Gloria Mendes."),
        (K.PHONE, "Catering booked; a £1,200 deposit was paid on 2 February."),
        (K.EMAIL, "Marcus stepped down; Hannah Cho has taken over the Shift Grid."),
        (K.CODE, "Family car is a 2018 Skoda Octavia estate."),
        (K.CODE, "The key is in a lockbox; only coordinators have the code."),
    ],
)
def test_a_memory_without_the_value(kind: ValueKind, content: str) -> None:
    assert not states_value(Asked(frozenset({kind})), content)


def test_a_surname_is_the_named_persons() -> None:
    asked = asked_value("What's Marisol's last name?")
    assert asked is not None and asked.person == "Marisol"
    assert states_value(asked, "Her instructor Marisol Vega teaches on Tuesdays")
    assert not states_value(asked, "Switched to Marisol's Tuesday 6pm slot")
    assert not states_value(asked, "Her partner Marisol teaches maths")
    assert not states_value(asked, "Lessons with Tom Reyes start in May")  # another person's surname


def test_a_question_of_two_kinds_takes_either() -> None:
    asked = asked_value("What's Omar's phone number or email address?")
    assert asked is not None and set(asked.kinds) == {K.PHONE, K.EMAIL}
    assert states_value(asked, "Omar prefers email: omar@brightwater.example")
    assert states_value(asked, "Omar's direct line is 0113 496 0123")
    assert not states_value(asked, "Omar Haddad is the new practice director")


def test_a_value_the_pii_redaction_replaced_is_still_stated() -> None:
    """Repro (blind fact set): a shared layer redacts PII by default, so "Chidi's is 298 114 650" is
    stored as "Chidi's is [REDACTED_PHONE]"; the question about his tax number lost its answer."""
    tax = asked_value("What is Chidi's Portuguese tax number?")
    assert tax is not None and states_value(tax, "Both adults have NIF numbers; Chidi's is [REDACTED_PHONE].")
    email = asked_value("What's the florist's email address?")
    assert email is not None and states_value(email, "Orders go to [REDACTED_EMAIL]")
    assert not states_value(email, "Call the florist on [REDACTED_PHONE]")
    code = asked_value("What's the account number for the deposit?")
    assert code is not None and states_value(code, "Deposit paid into [REDACTED_IBAN]")


@pytest.mark.parametrize(
    ("question", "content"),
    [
        ("What's her room number at the hospital?", "Ilse is on ward 4, room 12"),
        ("What's the gate number for the flight?", "Boarding is at gate 7"),
        ("What's Kyle's extension number?", "Kyle Brennan does dispatch now, same line, ext 7"),
        ("What number is the bus he takes?", "He takes the number 42 bus to work"),
        ("Which table number are we on?", "We're seated at table 6 by the window"),
    ],
)
def test_a_small_number_labels_a_room_a_gate_or_a_seat(question: str, content: str) -> None:
    """A room, gate, table or bus is labelled by a small number; such a question is answered by any
    number, not only by a code-like one ("What number do I dial?" still wants a phone number)."""
    asked = asked_value(question)
    assert asked is not None and states_value(asked, content)
    assert not states_value(asked, "Ilse moved to the rehab ward last week")


def test_what_number_to_dial_is_a_phone_number() -> None:
    asked = asked_value("What number do clinicians dial when they need IT urgently?")
    assert asked is not None and set(asked.kinds) == {K.PHONE}
    assert not states_value(asked, "Clinicians call the IT helpdesk for urgent issues on ward 4")
