"""LlamaIndex memory backed by window-budget."""
