"""LangChain adapter for window-budget."""
