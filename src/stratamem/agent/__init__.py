"""Agent-side utilities: what an agent loop needs around its model call (see :mod:`.loop`)."""

from .loop import ConversationResult, estimate_tokens, format_context, process_conversation, system_contract

__all__ = [
    "ConversationResult",
    "estimate_tokens",
    "format_context",
    "process_conversation",
    "system_contract",
]
