"""Prompt templates of the hygiene layer: write decision, formatting, classification, summary.

Every template can be overridden: ``PromptTemplates(write_decision="…")`` passed to
``Memory.open(..., hygiene=HygieneConfig(prompts=...))`` or ``mem.hygiene.prompts = ...``. The HTTP
LLM client sends them as system messages; the rule engine implements the same rules in code.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

SYSTEM_CONTRACT = """\
You maintain a long-lived memory about a user. Every stored item costs attention later, so be frugal.
Keep only what is stable, factual and likely to help in future conversations.
Never keep transcripts, guesses, moods or short-lived situations.
When a known fact changes, change the existing memory rather than adding a second one.
If in doubt, keep nothing."""

WRITE_DECISION = """\
Judge whether the message below deserves a place in long-term memory.
Worth keeping: a lasting preference of the user; a durable fact about the user, their work or their
environment; a standing instruction on how to behave; anything the user explicitly asks to keep.
Not worth keeping: goals for today or this session, one-off questions, feelings, speculation,
greetings and small talk, secrets or credentials.
Answer with a JSON object {"action": "store" | "ignore", "reason": "<a few words>"}."""

SEARCH_BEFORE_WRITE = """\
Before adding a memory, look for stored memories about the same subject, judged by meaning and
shared facts rather than wording. If one exists, revise it instead of adding a near copy."""

FORMAT_MEMORY = """\
Rewrite the message as one short factual statement about the user, in the third person, starting with
"User" (for example "User prefers dark mode"). Drop filler, chat phrasing and pronouns; keep names,
numbers and specifics. Pick a category: preference, fact, context or instruction.
Answer with a JSON object {"content": "<statement>", "category": "<category>"}."""

USER_NAME = """\
The user's name is {name}. Write "{name}" where the statement would say "User" (for example
"{name} prefers dark mode"), except in the statement of the name itself ("User's name is {name}")."""

UPDATE_MEMORY = """\
Revise the stored memory so it states only the newest information. Do not mention earlier values or
that anything changed. Trust the newest message unless it says otherwise.
Answer with a JSON object {"content": "<statement>", "category": "<category>"}."""

RETRIEVAL_USAGE = """\
Memories you are given may be stale or partial: treat them as hints, not facts. Do not quote them back
unless asked, and ask the user when a memory disagrees with what they say now."""

EXPLICIT_REMEMBER = """\
The user asked to keep this. Store it even if you would normally skip it, unless it is unsafe
(credentials, secrets) or meaningless."""

EXPLICIT_FORGET = """\
The user asked to forget this. Find every memory about it and delete them straight away."""

SUMMARIZE = """\
Merge the memories below into one concise third-person statement that keeps every distinct fact.
Answer with a JSON object {"content": "<statement>"}."""

EXTRACT_GRAPH = """\
List the named entities of the text (people, organisations, projects, products, places, technologies)
and the typed relations between them. Reuse a known entity's name exactly when the text refers to it.
Use an upper-case type for each entity (PERSON, ORG, PROJECT, PRODUCT, PLACE, TECHNOLOGY or ENTITY) and
an upper-case relation type, preferably one of the given relation types.
Answer with a JSON object {"entities": [{"name": "<name>", "type": "<TYPE>"}],
"relations": [{"source": "<entity name>", "target": "<entity name>", "type": "<RELATION_TYPE>"}]}."""

REFLECT = """\
The numbered memories below were written during one finished session of an assistant with a user.
Distil them for the assistant's own long-term memory: one short summary of what the session was about,
and the rules the assistant should follow from now on (standing instructions and lasting preferences,
phrased as guidance, for example "When the user asks for code, answer in TypeScript"). Each rule names
the numbers of the memories it comes from. Leave out anything transient. No rules is a valid answer.
Answer with a JSON object {"summary": "<summary>", "rules": [{"content": "<rule>", "sources": [1, 2]}]}."""

SUMMARIZE_CONVERSATION = """\
Summarise the earlier part of a conversation below so the assistant can continue it without the
original messages: who wanted what, decisions taken, facts stated, open questions. Be concise and keep
names, numbers and identifiers.
Answer with a JSON object {"content": "<summary>"}."""


class PromptTemplates(BaseModel):
    """The prompts sent to the LLM by the write gate; override any field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    system_contract: str = SYSTEM_CONTRACT
    write_decision: str = WRITE_DECISION
    search_before_write: str = SEARCH_BEFORE_WRITE
    format_memory: str = FORMAT_MEMORY
    #: Appended to ``format_memory`` when the user's name is known (``{name}`` is replaced).
    user_name: str = USER_NAME
    update_memory: str = UPDATE_MEMORY
    retrieval_usage: str = RETRIEVAL_USAGE
    explicit_remember: str = EXPLICIT_REMEMBER
    explicit_forget: str = EXPLICIT_FORGET
    summarize: str = SUMMARIZE
    extract_graph: str = EXTRACT_GRAPH
    reflect: str = REFLECT
    summarize_conversation: str = SUMMARIZE_CONVERSATION

    def system(self, task: str) -> str:
        """The system contract followed by one task template."""
        return f"{self.system_contract}\n\n{getattr(self, task)}"

    def format_system(self, name: str | None) -> str:
        """The format prompt, with the user's name when the write gate knows it.

        Args:
            name: The user's name, or None (the statement is written about "User").

        Returns:
            The system message of the format call.
        """
        base = self.system("format_memory")
        return f"{base}\n\n{self.user_name.replace('{name}', name)}" if name else base


DEFAULT_PROMPTS = PromptTemplates()
