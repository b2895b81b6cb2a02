"""The kind of value a question asks for, and whether a memory states one.

A question about a stored person or thing that the store cannot answer is usually a near miss:
"what's Nadia's salary at Lumen Freight?" beside "Nadia started in June as a junior backend developer
at Lumen Freight". The memory is about everything the question names, so no similarity, dense or
lexical, and no relevance floor tells it from an answer; a reader would see that it states no amount
of money. Many questions name the kind of value they want in their own words: an amount of money
("how much … cost", "what … charge"), an age, a year, a clock time, a phone number, an email
address, a code or reference number, the number of a room or a seat, a surname. For those, a
memory that states no value of that kind cannot be the answer, and default search leaves it out
(``MemoryConfig.value_check``, ``engine.py``): the question then returns nothing, as a question
with no stored answer should.
Counts ("how many") and durations ("how long") are not checked: in a store of conversation turns
they are tallied across turns ("how many times has Joanna been hiking?") that state no number.

The check reads the question's clauses ("when is the regatta and what does it cost to enter?" has
two): only when every clause asks for a kind does a result need to state one of them, so a question
that also asks something else ("who …", "when …") is never checked. Only question forms count (the
clause starts with "what", "which" or "how", after an optional "and" / "so"), so a search for "phone
number validation" is not a question about a phone number. What counts as a value is deliberately
broad ("free" is an amount of money, any number an age): the check removes a result only when the
memory holds nothing of the kind at all. English only, as the rest of the rule-based reading
(``supersession/``, ``voice.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

_I = re.IGNORECASE
#: The typographic apostrophe (U+2019) reads as a plain one in questions and memories.
_CURLY_APOSTROPHE = "\u2019"


class ValueKind(StrEnum):
    """A kind of value a question can ask for."""

    MONEY = "money"
    AGE = "age"
    YEAR = "year"
    CLOCK = "clock_time"
    PHONE = "phone_number"
    EMAIL = "email_address"
    CODE = "code"
    LABEL = "label_number"
    SURNAME = "surname"


@dataclass(frozen=True, slots=True)
class Asked:
    """What a question asks for: a result must state a value of one of ``kinds``. ``person`` is the
    first name whose surname is asked for ("What is Callum's surname?"), when the question gives one."""

    kinds: frozenset[ValueKind]
    person: str | None = None


# -- the question ---------------------------------------------------------------------------------

#: A second question joined to the first: "…, and what does it cost?", "… or which …".
_CLAUSES = re.compile(
    r"\s*(?:[,;]|\band\b|\bor\b|\bthen\b)\s*(?=(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were"
    r"|does|do|did|can|could|will|would|has|have|should)\b)",
    _I,
)
#: A question clause: it starts with what / which / how (after an optional "and" or "so"), or asks
#: to be told ("tell me", "remind me", "do you know").
_QUESTION = re.compile(
    r"^(?:and\s+|so\s+|also\s+)?(?:(?:can|could) you\s+)?(?:tell me|remind me|do you know|give me)?\s*"
    r"(?:what|which|how)\b",
    _I,
)
_MONEY_WORDS = (
    r"(?:cost|costs|costing|price|priced|prices|charge|charges|charged|charging|pay|pays|paid|paying|salary"
    r"|salaries|wage|wages|fee|fees|rent|budget|spend|spent|spending|earn|earns|earned|earning|bill|billed"
    r"|subs|subscription|fare|fares|afford|worth|money|sell for|sells for|sold for|go for|goes for|went for"
    r"|want for|wants for|asking)"
)
#: A "what" question about money: "what does a ticket cost", "what did she pay for it", "what's the
#: rent", "what salary …" (not "what does he do to pay the bills").
_WHAT_MONEY = re.compile(
    r"\bwhat\s+(?:does|did|do|will|would|is|are|was|were|can|should)\s+(?:[\w'-]+\s+){0,4}?(?<!to\s)"
    r"(?:cost|costs|charge|charges|charging|charged|pay|pays|paid|paying|earn|earns|earned|get paid)\b"
    r"|\bwhat\s+(?:is|are|was|were)\s+(?:[\w'-]+\s+){0,4}?(?:price|prices|cost|costs|fee|fees|rent|salary|wage"
    r"|wages|budget|fare|fares|rate|rates)\b"
    r"|\bwhat\s+(?:price|prices|salary|wage|wages|fee|fees|rent|budget|fare)\b",
    _I,
)
#: A share, not an amount: "what royalty rate", "what percentage".
_RATE = re.compile(r"\b(?:percentage|percent|rate|rates|ratio|share|cut)\b", _I)
_EMAIL_ASKED = re.compile(
    r"\be-?mail\s+address(?:es)?\b|\bwhat\s+(?:is\s+|are\s+)?(?:[\w']+\s+)?e-?mail\b(?!\s+(?:reply|replies))",
    _I,
)
_PHONE_ASKED = re.compile(
    r"\b(?:phone|mobile|cell|cellphone|telephone|contact|fax|landline|whatsapp|office|home|work)\s+numbers?\b"
    # "what number do I dial / call", not "what number is the bus"
    r"|\b(?:what|which)\s+number\b(?!\s+one\b)(?=.*\b(?:dial|call|ring|text|phone|reach|contact)\b)",
    _I,
)
#: A small number that labels a place or a seat ("room 12", "gate 7", "ext 7", "the number 42 bus"):
#: any number answers it.
_LABEL_ASKED = re.compile(
    r"\b(?:room|gate|table|seat|unit|flat|apartment|house|door|platform|bus|route|locker|extension|ext|ward"
    r"|bed|pitch|plot|stall|bay|berth|cabin|desk|lane|court|hole|shirt|jersey|squad|pew|box)\s+(?:number|no\.?)s?\b"
    r"|\b(?:what|which)\s+number\b(?!\s+one\b)(?!.*\b(?:dial|call|ring|text|phone|reach|contact)\b)",
    _I,
)
_CODE_ASKED = re.compile(
    r"\b(?:registration|reg|policy|account|reference|ref|order|po|purchase order|serial|permit|invoice|tracking"
    r"|licen[cs]e|membership|booking|flight|case|customer|member|claim|vat|tax|model|part|lot|batch)"
    r"\s+(?:number|no\.?|code|ref)s?\b"
    r"|\b(?:number\s+plate|licen[cs]e\s+plate|passcode|password|pin|pin\s+code|postcode|post\s+code|zip\s+code"
    r"|zip|sort\s+code|confirmation\s+code|booking\s+code|promo\s+code|discount\s+code|voucher\s+code"
    r"|(?:lockbox|lock\s+box|door|gate|alarm|entry|access|wifi|wi-fi|security|key\s?safe|garage|padlock)\s+code)\b",
    _I,
)
_SURNAME_ASKED = re.compile(r"\b(?:surname|last\s+name|family\s+name|maiden\s+name)\b", _I)
_SURNAME_OF = re.compile(r"\b([A-Z][a-z]+)'s\s+(?:surname|last\s+name|family\s+name|maiden\s+name)\b")
_YEAR_ASKED = re.compile(r"\b(?:what|which)\s+year\b", _I)
_CLOCK_ASKED = re.compile(r"\b(?:what|which)\s+time\b(?!\s+(?:zone|of\s+year|slot|frame|period|limit))", _I)
_HOW_MUCH = re.compile(r"\bhow\s+much\b(.*)", _I)
_HOW_OLD = re.compile(r"\bhow\s+old\b", _I)


#: The phrases that ask for each kind, but money (read after "how much" or "what … cost").
_ASKED: tuple[tuple[re.Pattern[str], ValueKind], ...] = (
    (_EMAIL_ASKED, ValueKind.EMAIL),
    (_PHONE_ASKED, ValueKind.PHONE),
    (_CODE_ASKED, ValueKind.CODE),
    (_LABEL_ASKED, ValueKind.LABEL),
    (_SURNAME_ASKED, ValueKind.SURNAME),
    (_YEAR_ASKED, ValueKind.YEAR),
    (_CLOCK_ASKED, ValueKind.CLOCK),
    (_HOW_OLD, ValueKind.AGE),
)
_MONEY_REST = re.compile(rf"\b{_MONEY_WORDS}\b", _I)


def _clause_kinds(clause: str) -> set[ValueKind]:
    """The kinds of value one clause asks for (empty when it asks for none the check knows)."""
    text = re.sub(r"\bwhat's\b", "what is", clause.strip(), flags=_I)
    if not _QUESTION.match(text):
        return set()
    kinds = {kind for pattern, kind in _ASKED if pattern.search(text)}
    much = _HOW_MUCH.search(text)
    if much is not None:
        rest = much.group(1)
        # "how much does it cost", "how much are termly subs"; not "how much metformin" (a dose)
        if _MONEY_REST.search(rest) or re.match(r"\s+(?:is|are|was|were)\b", rest, _I):
            kinds.add(ValueKind.MONEY)
    elif not kinds and _WHAT_MONEY.search(text) and not _RATE.search(text):
        kinds.add(ValueKind.MONEY)
    return kinds


def asked_value(query: str) -> Asked | None:
    """The kinds of value ``query`` asks for, or None when it is not such a question (or one of its
    clauses asks for something else)."""
    query = query.replace(_CURLY_APOSTROPHE, "'")
    clauses = [c for c in _CLAUSES.split(query) if c.strip()]
    per_clause = [_clause_kinds(c) for c in clauses]
    if not per_clause or not all(per_clause):
        return None
    kinds = frozenset(k for ks in per_clause for k in ks)
    person = None
    if ValueKind.SURNAME in kinds:
        named = _SURNAME_OF.search(query)
        person = named.group(1) if named else None
    return Asked(kinds, person)


# -- the memory -----------------------------------------------------------------------------------

#: The numbers a room, a gate or a seat is labelled with in words.
_SMALL_NUMBERS = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_NUMBER_WORDS = (
    rf"(?:{_SMALL_NUMBERS}|thirteen|fourteen|fifteen|sixteen"
    r"|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|hundreds"
    r"|thousand|thousands|million|millions|billion|dozen|dozens|couple|pair|twins|triplets|both|half|single"
    r"|several|few|handful|none|nobody|once|twice)"
)
_CURRENCY = r"(?:[$£€¥₹₩₽]|\b(?:usd|eur|gbp|chf|pln|sek|nok|dkk|aud|cad|nzd|jpy|inr|zł|kr|rs)\b\.?)"
_SCALE = r"(?:\s?(?:k|m|bn|thousand|million|billion|grand))?"
_MONEY_UNIT = (
    r"(?:dollars?|pounds?|euros?|quid|bucks|pence|p|cents?|grand|zlot(?:y|ys|ych|e)|z[lł]|kron(?:a|or|er|e)|francs?"
    r"|yen|yuan|rupees?|pesos?|rand|usd|eur|gbp|pln|chf|sek|nok|dkk|aud|cad|jpy|inr|zł|kr)"
)
_PER = (
    r"(?:a|an|per|each|/)\s?(?:month|week|year|hour|hr|day|night|session|lesson|class|head|person|place|ticket"
    r"|visit|term|jar|kilo|kg|lb|word|page|mile|km|litre|liter|unit|item|piece|square|sq|seat|user|licen[cs]e"
    r"|portrait|print|image|photo|box|bag|bottle|dozen|loaf|cup|plate|pint|slot)"
)
_MONEY = re.compile(
    rf"{_CURRENCY}\s?\d|\d[\d,.]*{_SCALE}\s?{_MONEY_UNIT}\b|\b{_NUMBER_WORDS}{_SCALE}\s{_MONEY_UNIT}\b"
    rf"|\d[\d,.]*{_SCALE}\s?{_PER}\b|(?<![\w-])free\b|\bno\s+charge\b|\bat\s+cost\b",
    _I,
)
_CLOCK = re.compile(
    r"\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}h\d{0,2}\b|\bat\s+\d{1,2}\b"
    r"|\b(?:noon|midday|midnight|o[']clock|half\s+past|quarter\s+(?:past|to))\b",
    _I,
)
_YEAR = re.compile(
    rf"\b(?:1[5-9]|20)\d{{2}}s?\b|'\d{{2}}\b|\b(?:\d+|{_NUMBER_WORDS})\s+years?\s+ago\b"
    r"|\b(?:last|this|next)\s+year\b",
    _I,
)
_PHONE = re.compile(
    r"(?<![£$€¥\w.,])\+?\(?\d[\d\s().-]{4,}\d\b(?!\s?%)|\b(?:ext|extension|x)\.?\s?\d{3,}\b"
    r"|\b(?:dial|call|ring|text)\s+\d{3,}\b",
    _I,
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
#: A code: a token of letters and digits ("BD-22817", "YK18 ABC"), five digits or more, or three or
#: four digits that are not a year.
_CODE = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[a-z])[\w-]{3,}\b|\b\d{5,}\b|\b(?!(?:1[5-9]|20)\d\d\b)\d{3,4}\b", _I)
_AGE = re.compile(
    rf"\d|\b{_NUMBER_WORDS}\b|\b(?:teens?|teenager|twenties|thirties|forties|fifties|sixties|seventies|eighties"
    r"|nineties|toddler|baby|newborn|infant)\b",
    _I,
)
_HOLDS: dict[ValueKind, re.Pattern[str]] = {
    ValueKind.MONEY: _MONEY,
    ValueKind.AGE: _AGE,
    ValueKind.YEAR: _YEAR,
    ValueKind.CLOCK: _CLOCK,
    ValueKind.PHONE: _PHONE,
    ValueKind.EMAIL: _EMAIL,
    ValueKind.CODE: _CODE,
    ValueKind.LABEL: re.compile(rf"\d|\b{_SMALL_NUMBERS}\b", _I),
}


def _states_surname(person: str | None, content: str) -> bool:
    """The memory gives ``person`` a surname ("Callum Reyes", "Callum O'Neill"); any memory may
    when the question names no one."""
    if person is None:
        return True
    return re.search(rf"\b{re.escape(person)}\s+(?:[A-Z][a-z]+-)?(?:[A-Z]['])?[A-Z][\w'-]+", content) is not None


#: What the PII redaction of a shared layer leaves of a value (``hygiene/pii.py``): the memory stated
#: one, of the kinds each marker may stand for ("Chidi's tax number is [REDACTED_PHONE]").
_REDACTED = re.compile(r"\[REDACTED_(?P<what>[A-Z]+)\]")
_REDACTED_KINDS: dict[str, frozenset[ValueKind]] = {
    "EMAIL": frozenset({ValueKind.EMAIL}),
    "PHONE": frozenset({ValueKind.PHONE, ValueKind.CODE}),
}
_REDACTED_OTHER = frozenset({ValueKind.CODE})  # a card, an IBAN, an SSN, an IP address


def states_value(asked: Asked, content: str) -> bool:
    """Whether ``content`` states a value of one of the kinds ``asked`` for."""
    content = content.replace(_CURLY_APOSTROPHE, "'")
    for marker in _REDACTED.finditer(content):
        if asked.kinds & _REDACTED_KINDS.get(marker.group("what"), _REDACTED_OTHER):
            return True
    for kind in asked.kinds:
        if kind is ValueKind.SURNAME:
            if _states_surname(asked.person, content):
                return True
        elif _HOLDS[kind].search(content):
            return True
    return False
