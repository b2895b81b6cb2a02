"""Framework adapters; each module needs its framework (an optional extra: ``pip install stratamem[langgraph]``)."""
