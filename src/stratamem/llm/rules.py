"""Deterministic, offline implementation of the LLM protocol (used when no LLM is configured).

It follows the same rules as the prompt templates in :mod:`stratamem.hygiene.prompts`:

* **decide**: small talk, one-off questions/requests, emotions, guesses, and transient goals or
  states are ignored; stable preferences, durable facts, standing instructions and project context
  are stored; anything else is ignored ("when unsure, do not store").
* **format**: first person → third person ("I prefer vim" → "User prefers vim", or "Dana prefers
  vim" when the user's name is known), filler and chat phrasing removed.
* **classify**: preference | fact | context | instruction by keyword.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import ErrorCode, MemoryError
from ..hygiene.text import jaccard, key_terms
from .base import Category, Classification, DecisionContext, FormattedMemory, M, Summary, WriteDecision

_I = re.I

_FILLER_START = re.compile(
    r"^(?:(?:hey|hi|hello|ok|okay|so|well|um+|uh+|oh|btw|by the way|fyi|just so you know|for the record|"
    r"actually|also|and|anyway|honestly|note|quick note|heads up|just fyi|just a heads up)\b[,:!.\-\u2013]*\s*)+",
    _I,
)
_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:(?:can|could|would|will) you(?: please)?\s+)?(?:(?:always\s+)?remember|note down|note|"
    r"keep in mind|don't forget|do not forget|make a note(?: of)?|save|store|memori[sz]e|bear in mind)"
    r"(?:\s+(?:this|that|the fact))?(?:\s*[:,\-\u2013]\s*|\s+)(?:that\s+)?",
    _I,
)
_FORGET = re.compile(
    r"^(?:please\s+)?(?:(?:can|could|would|will) you(?: please)?\s+)?(?:forget|delete|remove|erase|drop|"
    r"stop remembering|no longer remember|don't remember)(?:\s+(?:about|all about|everything about|that|"
    r"the fact that|what i (?:said|told you) about|(?:all\s+)?(?:the\s+)?memor(?:y|ies) (?:of|about)))*[\s:,]*",
    _I,
)
_FILLER_END = re.compile(
    r"[\s,]*(?:lol|haha+|hehe|:\)|:-\)|;\)|thanks|thank you|thx|please|pls|ok\??|okay\??)[.!]*$", _I
)

_SMALL_TALK = re.compile(
    r"^(?:hi|hello|hey|yo|thanks|thank you|thx|ok|okay|cool|nice|great|awesome|sure|yes|yeah|yep|no|nope|bye|"
    r"goodbye|see you|good (?:morning|afternoon|evening|night)|how are you(?: doing)?|what's up|lol|haha+|"
    r"sounds good|got it|perfect|alright|hmm+|wow|interesting|makes sense|no problem|you too|cheers|"
    r"that's (?:great|cool|nice|fine|ok|okay|interesting|funny)|i see|fine|good|welcome|never mind|nevermind)"
    r"[\s!.?,]*(?:(?:thanks|thank you|lol|again|so much|a lot|then|man|mate|buddy|there|everyone|all|friend)"
    r"[\s!.?,]*)*$",
    _I,
)
_QUESTION_START = re.compile(
    r"^(?:what|who|whom|where|when|why|how|which|whose|can you|could you|would you|will you|do you|did you|"
    r"does|is it|is there|are there|are you|should i|should we|shall we|may i|tell me|explain|show me|help me|"
    r"give me|write|draft|generate|find|search|look up|translate|summari[sz]e|list|compare|calculate|convert|"
    r"recommend|suggest|fix|debug|check|create|make|build|send|book|schedule|open|run|set a|remind me)\b",
    _I,
)
_GUESS = re.compile(
    r"\b(?:i think|i guess|i suppose|i assume|i believe (?:they|he|she|it)|maybe|probably|perhaps|might be|"
    r"might have|may be|not sure|i'm not sure|i am not sure|possibly|seems like|it seems|i doubt|i wonder|"
    r"could be|apparently|presumably|i suspect|rumou?r)\b",
    _I,
)
_EMOTION = re.compile(
    r"\b(?:i feel|i'm feeling|i am feeling|feeling (?:so |really |very |a bit |kind of )?\w+|i'm (?:so |really |very |"
    r"a bit |kind of |super |pretty )?(?:tired|happy|sad|angry|upset|frustrated|bored|excited|stressed|annoyed|"
    r"worried|anxious|exhausted|hungry|sleepy|confused|nervous|glad|thrilled|grumpy|furious|overwhelmed|"
    r"lonely|scared|disappointed|fed up|burnt out|burned out|sick of this|in a (?:good|bad) mood)|"
    r"i am (?:so |really |very )?(?:tired|happy|sad|angry|upset|frustrated|bored|excited|stressed|annoyed|"
    r"worried|anxious|exhausted|hungry|sleepy|confused|nervous|furious|overwhelmed)|ugh+|argh+|yay+|"
    r"this (?:sucks|is (?:so )?(?:annoying|frustrating|awesome|great))|i'm having a (?:bad|rough|great|good) day)\b",
    _I,
)
_TRANSIENT = re.compile(
    r"\b(?:today|tonight|right now|this morning|this afternoon|this evening|this week(?:end)?|tomorrow|"
    r"yesterday|at the moment|for now|in a (?:minute|moment|bit|sec)|later today|just now|this time|"
    r"for this (?:session|chat|conversation|task)|currently (?:\w+ing)|next (?:hour|few minutes))\b",
    _I,
)
_GOAL = re.compile(
    r"^(?:(?:i'm|i am) (?:going to|about to|trying to|planning to|looking for|looking at|thinking about|"
    r"wondering|in the middle of|on my way)|i (?:need|have|want|would like|'d like|wanna|gotta|plan|hope) to|"
    r"i need (?:a|an|some|help)|i want (?:a|an|some)|let's|let me|gonna|i'll|i will|we need to|we should)\b",
    _I,
)

_INSTRUCTION = re.compile(
    r"^(?:please\s+)?(?:always|never|from now on|going forward|in (?:the )?future|by default|whenever|"
    r"every time|each time|don't ever|do not ever|call me|address me|refer to me)\b"
    r"|\b(?:from now on|going forward|by default|in all (?:future )?(?:answers|responses|replies))\b"
    r"|^(?:i want|i'd like|i would like|i prefer) (?:you|answers|responses|replies|code|explanations)\b",
    _I,
)
_PREFERENCE = re.compile(
    r"\b(?:i (?:really |much |strongly |generally |usually |mostly |definitely |absolutely |also |do |still |now )*"
    r"(?:prefer|like|love|enjoy|hate|dislike|adore|loathe|can't stand|cannot stand|don't like|do not like|"
    r"don't eat|do not eat|never eat|don't drink|never drink|avoid|use|drink|eat|listen to|play|watch|read)|"
    r"my (?:favou?rite|preferred|go-to)|i'm (?:a (?:big |huge )?fan of|into|vegetarian|vegan|pescatarian)|"
    r"i am (?:a (?:big |huge )?fan of|vegetarian|vegan)|(?:is|are) my (?:favou?rite|preferred))\b",
    _I,
)
_FACT = re.compile(
    r"(?:^|\b)(?:my (?:[\w'\u2019-]+ ){0,3}(?:is|are|was|were|has|have|lives|works|studies)\b|"
    r"i (?:work|worked|live|lived|grew up|was born|moved|studied|study|graduated|speak|own|have|drive|ride|"
    r"teach|manage|lead|run|maintain|volunteer|coach|commute|celebrate|go|attend|wear|take|need|keep|train|"
    r"practi[cs]e|write|code|program|develop|build)\b|i'm (?:a|an|from|based|allergic|married|single|divorced|"
    r"engaged|left-handed|right-handed|colou?r ?blind|deaf|diabetic|lactose|gluten|employed|\d+)\b|"
    r"i am (?:a|an|from|based|allergic|married|single|divorced|engaged|\d+)\b|i've (?:been|got|had|lived|worked)\b|"
    r"i have (?:been|had|lived|worked)\b|"
    r"^[A-Z][\w'\u2019-]* (?:is|are) (?:my|the user's)\b)",
    _I,
)
_CONTEXT = re.compile(
    r"\b(?:we|our team|our company|the team|my team|our (?:project|repo|app|service|stack|codebase|product|"
    r"backend|frontend|api|infra(?:structure)?|database|org|organi[sz]ation|department)|the (?:project|repo|"
    r"codebase|app|service|stack)|this (?:project|repo|codebase))\s+(?:use|uses|used|is|are|runs?|deploys?|"
    r"targets?|depends|relies|requires?|ships?|builds?|follows?|has|have|needs?)\b"
    r"|\bi'm (?:working|building|developing|maintaining) (?:on )?(?:a |an |the |our |my )?(?:project|app|"
    r"service|library|product|startup|game|website|tool)\b|\bi (?:work|am working) on (?:a |an |the |our )?"
    r"(?:project|app|service|library|product|team)\b",
    _I,
)

#: Standing instructions about the assistant's answers ("Please keep your answers short, bullet points").
_STYLE = re.compile(
    r"^(?:please\s+)?(?:keep|make) (?:your |the |all |my )?(?:answers?|responses?|replies|explanations?|"
    r"summaries|messages|it|them|things)\b"
    r"|\b(?:answers?|responses?|replies|explanations?)\b.*\b(?:short|brief|concise|bullet|formal|informal|"
    r"detailed|casual|in (?:english|german|french|spanish|portuguese|markdown))\b"
    r"|^(?:please\s+)?(?:use|answer (?:in|with)|reply (?:in|with)|respond (?:in|with)|write in|format (?:as|with|in)) "
    r"(?:bullet points|bullets|markdown|plain text|british english|american english|metric units|imperial units|"
    r"the metric system)\b",
    _I,
)
#: People and pets of the user: facts about them are kept ("My daughter Emma starts school in September").
_RELATION = re.compile(
    r"\bmy (?:wife|husband|partner|spouse|son|daughter|sons|daughters|kids?|children|child|baby|mother|mom|mum|"
    r"father|dad|brother|sister|siblings?|parents?|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|"
    r"niece|nephew|boss|manager|colleague|coworker|co-worker|team ?lead|mentor|friend|best friend|roommate|"
    r"neighbou?r|dog|cat|pet|puppy|kitten|girlfriend|boyfriend|fianc[ée]e?)\b",
    _I,
)
#: A plan or event with a date ("in September", "on 14 March", "next month"): kept, unlike "today".
_DATED = re.compile(
    r"\b(?:in|on|by|from|until|since|before|after|next|this coming|every) (?:the )?(?:\d{1,2}(?:st|nd|rd|th)? )?"
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|spring|summer|autumn|fall|winter|year|month|\d{4})\b",
    _I,
)
#: A change of a stored fact ("not vegetarian anymore", "switched to", "no longer"): kept, and the
#: store marks the older fact superseded.
_CHANGE = re.compile(
    r"\b(?:any ?more|no longer|switched (?:to|from)|moved to|not \w+ any ?more|now (?:live|work|"
    r"use|eat|prefer|drive|own|have)s?)\b",
    _I,
)

_REPORTED = re.compile(
    r"^(?:the )?user (?:said|says|told me|tells me|mentioned|mentions|stated|noted|explained|shared)"
    r"(?: that)?(?: (?:they|he|she)(?P<be>'re| are| is|'s)?)? ",
    _I,
)

_ADVERBS = (
    "now",
    "really",
    "usually",
    "often",
    "also",
    "always",
    "never",
    "generally",
    "mostly",
    "sometimes",
    "only",
    "still",
    "just",
    "absolutely",
    "definitely",
    "strongly",
    "typically",
    "normally",
    "rarely",
    "occasionally",
    "much",
    "currently",
    "now",
    "actually",
)
_MODALS = {"can", "could", "will", "would", "should", "must", "might", "may", "shall", "did", "used"}
_IRREGULAR = {
    "have": "has",
    "do": "does",
    "go": "goes",
    "be": "is",
    "am": "is",
    "was": "was",
    "were": "was",
    "'m": "is",
    "'ve": "has",
    "can't": "cannot",
    "don't": "does not",
    "didn't": "did not",
    "won't": "will not",
    "wasn't": "was not",
    "haven't": "has not",
    "'d": "would",
    "'ll": "will",
}


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _MODALS or low.endswith("ed"):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def first_person(text: str) -> str:
    """ "The user told me they like X" → "I like X" (reported speech about the user)."""
    out = _REPORTED.sub(lambda m: "I am " if m.group("be") else "I ", text.strip(), count=1)
    if out != text.strip():
        out = re.sub(r"^I (?:their|his|her) ", "my ", out)
    return out


def strip_remember(text: str) -> str:
    return _REMEMBER.sub("", text, count=1).strip()


def strip_forget(text: str) -> str:
    return _FORGET.sub("", text, count=1).strip()


def clean(text: str) -> str:
    """Whitespace, leading filler and trailing chat noise removed."""
    text = re.sub(r"\s+", " ", text).strip()
    for _ in range(2):
        text = _FILLER_START.sub("", text).strip()
        text = _FILLER_END.sub("", text).strip()
    return text


def to_third_person(text: str, name: str | None = None) -> str:
    """Rewrite a first-person sentence about the user as a third-person fact about the user.

    Args:
        text: The first-person sentence ("I prefer dark mode").
        name: The user's name when known: the fact is written about the name ("Dana prefers dark
            mode", "Dana's daughter Emma …"); without it, the neutral "User" ("User prefers dark mode").
            The statement of the name itself keeps "User" ("User's name is Dana").

    Returns:
        The third-person fact, or an empty string for empty input.
    """
    subj = name or "User"
    mid = name or "the user"
    mid_poss = f"{name}'s" if name else "the user's"
    s = clean(text).replace("\u2019", "'")
    s = first_person(s)
    s = re.sub(r"^please\s+", "", s, flags=_I)
    if re.match(r"^(?:call me|address me as|refer to me as)\s+", s, _I):
        s = re.sub(r"^(?:call me|address me as|refer to me as)\s+", "User wants to be called ", s, flags=_I)
    elif re.match(r"^(?:always|never|from now on|going forward|by default|in (?:the )?future)\b", s, _I):
        s = re.sub(r"^(?:from now on|going forward|by default|in (?:the )?future),?\s*", "", s, flags=_I)
        s = f"{subj} wants the assistant to " + s[0].lower() + s[1:] if s else s
    elif re.match(r"^my (?:first |full |given )?name\b", s, _I):
        s = re.sub(r"^my\b", "User's", s, flags=_I)
    elif re.match(r"^my\b", s, _I):
        s = re.sub(r"^my\b", lambda _m: f"{subj}'s", s, flags=_I)
    elif re.match(r"^(?:our)\b", s, _I):
        s = re.sub(r"^our\b", lambda _m: f"{subj}'s", s, flags=_I)
    elif re.match(r"^we\b", s, _I):
        m = re.match(r"^we\s+(?:(" + "|".join(_ADVERBS) + r")\s+)?([\w'-]+)", s, _I)
        if m:
            adv = f"{m.group(1)} " if m.group(1) else ""
            s = f"{subj}'s team {adv}{_third_person(m.group(2))}" + s[m.end() :]
    elif re.match(r"^i(?:'m|'ve|'d|'ll)\b", s, _I):
        s = re.sub(r"^i('m|'ve|'d|'ll)", lambda m: f"{subj} " + _IRREGULAR[m.group(1).lower()], s, flags=_I)
        s = re.sub(r"^" + re.escape(subj) + r" has got\b", lambda _m: f"{subj} has", s)
    elif re.match(r"^i\s", s, _I):
        m = re.match(r"^i\s+((?:(?:" + "|".join(_ADVERBS) + r")\s+)*)([\w'-]+)", s, _I)
        if m:
            s = f"{subj} {m.group(1)}{_third_person(m.group(2))}" + s[m.end() :]
    # the rest of the sentence
    s = re.sub(r"\bI'm\b", lambda _m: f"{mid} is", s)
    s = re.sub(r"\bI've\b", lambda _m: f"{mid} has", s)
    s = re.sub(
        r"\bI\s+((?:(?:" + "|".join(_ADVERBS) + r")\s+)*)([a-z][\w'-]*)",
        lambda m: f"{mid} {m.group(1)}{_third_person(m.group(2))}",
        s,
    )
    s = re.sub(r"\bI\b", lambda _m: mid, s)
    s = re.sub(r"\bmy\b", lambda _m: mid_poss, s, flags=_I)
    s = re.sub(r"\bmine\b", "theirs", s, flags=_I)
    s = re.sub(r"\bmyself\b", "themselves", s, flags=_I)
    s = re.sub(r"\bme\b", lambda _m: mid, s, flags=_I)
    s = re.sub(r"\s+", " ", s).strip().rstrip(".!;, ")
    # state only the newest fact: no "now" / "anymore" pointing at an earlier version
    s = re.sub(r"^" + re.escape(subj) + r" now\b", lambda _m: subj, s)
    s = re.sub(r",? (?:now|nowadays|these days)$", "", s, flags=_I)
    return s[:1].upper() + s[1:] if s else s


#: A statement about someone or something: a subject, then a verb ("Dana is planning a trip to Lisbon").
_STATEMENT = re.compile(
    r"^(?:[\w'\u2019-]+ ){1,4}(?:is|are|was|were|has|have|had|will|lives|works|prefers|likes|loves|hates|uses|"
    r"owns|drives|plans|is planning|starts|started|moved|switched|wants|needs|speaks|studies|runs|leads|manages|"
    r"reports|eats|drinks|goes|visits|joined|left|became|celebrates|teaches|writes|builds|chose|decided)\b",
    _I,
)


def worth_keeping(text: str) -> bool:
    """Whether a stored memory states something durable, in the write gate's terms: a preference,
    instruction, fact, relationship or dated plan, not small talk, a question, a guess, a feeling or a
    transient state. Works on first-person text and on stored third-person facts alike."""
    low = clean(text).lower().replace("\u2019", "'")
    if not low or _SMALL_TALK.match(low) or low.endswith("?") or _QUESTION_START.match(low):
        return False
    if _GUESS.search(low) or _EMOTION.search(low):
        return False
    if _TRANSIENT.search(low) and not _INSTRUCTION.search(low):
        return False
    if RuleBasedLLM().decide(text, DecisionContext(recent_messages=[], user_intent="none")).action == "store":
        return True
    return (
        bool(_STATEMENT.match(low)) or bool(_RELATION.search(low)) or bool(_DATED.search(low) and _STATEMENT.match(low))
    )


def categorize(text: str) -> Category:
    """preference | fact | context | instruction, by keyword (no LLM needed)."""
    low = text.lower().replace("\u2019", "'")
    if (
        _INSTRUCTION.search(low)
        or _STYLE.search(low)
        or re.search(r"\buser wants (?:the assistant|to be called|answers|responses)\b", low)
    ):
        return "instruction"
    if _PREFERENCE.search(low) or re.search(
        r"\buser (?:\w+ )?(?:prefers|likes|loves|enjoys|hates|dislikes|adores|avoids|uses|drinks|eats)\b|"
        r"\bfavou?rite\b|\bfan of\b|\bvegetarian\b|\bvegan\b",
        low,
    ):
        return "preference"
    if _CONTEXT.search(low) or re.search(
        r"\buser's (?:team|project|repo|codebase|stack|company|app)\b|"
        r"\buser is (?:working|building) on\b",
        low,
    ):
        return "context"
    return "fact"


class RuleBasedLLM:
    """The offline decision engine. Stateless and deterministic."""

    name = "rules"

    def decide(self, text: str, context: DecisionContext, *, system: str | None = None) -> WriteDecision:
        body = clean(first_person(strip_remember(text) if context.user_intent == "remember" else text))
        low = body.lower().replace("\u2019", "'")
        if _SMALL_TALK.match(text.strip().lower()):
            return WriteDecision(action="ignore", reason="small talk")
        if not low or not re.search(r"[a-z0-9]", low):
            return WriteDecision(action="ignore", reason="empty after cleaning")
        if _SMALL_TALK.match(low):
            return WriteDecision(action="ignore", reason="small talk")
        if _STYLE.search(low) and not low.endswith("?"):
            return WriteDecision(action="store", reason="standing instruction")
        if low.endswith("?") or _QUESTION_START.match(low):
            return WriteDecision(action="ignore", reason="one-off question or request")
        if _GUESS.search(low):
            return WriteDecision(action="ignore", reason="speculation, not a fact")
        if _EMOTION.search(low):
            return WriteDecision(action="ignore", reason="emotional state")
        stable_instruction = _INSTRUCTION.search(low)
        if _TRANSIENT.search(low) and not stable_instruction:
            return WriteDecision(action="ignore", reason="transient state or goal")
        if _GOAL.match(low) and not stable_instruction and not _DATED.search(low):
            return WriteDecision(action="ignore", reason="transient goal")
        if stable_instruction:
            return WriteDecision(action="store", reason="standing instruction")
        if _CHANGE.search(low):
            return WriteDecision(action="store", reason="a changed fact about the user")
        if _RELATION.search(low):
            return WriteDecision(action="store", reason="a fact about someone in the user's life")
        if _PREFERENCE.search(low):
            return WriteDecision(action="store", reason="stable preference")
        if _CONTEXT.search(low):
            return WriteDecision(action="store", reason="durable project or work context")
        if _FACT.search(body):
            return WriteDecision(action="store", reason="durable fact about the user")
        if _DATED.search(low) and re.match(r"^(?:i|i'm|i am|we|we're|we are|my|our)\b", low):
            return WriteDecision(action="store", reason="a dated plan or event")
        return WriteDecision(action="ignore", reason="not a stable fact about the user")

    def format(self, text: str, *, system: str | None = None, user_name: str | None = None) -> FormattedMemory:
        """Rewrite ``text`` as a concise third-person fact with a category.

        Args:
            text: The message.
            system: The prompt an LLM would get (the rule engine implements it in code).
            user_name: The user's name when known: the fact is written about the name instead of "User".

        Returns:
            The formatted memory.
        """
        body = strip_remember(text)
        content = to_third_person(body, user_name) or clean(body) or text.strip()
        return FormattedMemory(content=content, category=categorize(first_person(clean(body))))

    def classify(self, text: str) -> Classification:
        return Classification(category=categorize(text))

    def summarize(self, texts: Sequence[str], *, system: str | None = None) -> Summary:
        kept: list[str] = []
        for text in texts:
            line = clean(text).rstrip(".")
            if line and all(jaccard(key_terms(line), key_terms(k)) < 0.8 for k in kept):
                kept.append(line)
        if not kept:
            raise MemoryError(ErrorCode.INVALID_PARAMS, "nothing to summarise", operation="llm")
        return Summary(content="; ".join(kept))

    def complete_json(self, system: str, user: str, schema: type[M]) -> M:
        raise MemoryError(
            ErrorCode.CONFIGURATION_ERROR,
            "free-form LLM calls need an LLM: set STRATAMEM_LLM_URL and STRATAMEM_LLM_MODEL",
            operation="llm",
        )

    def close(self) -> None:
        return None
