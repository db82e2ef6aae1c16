"""The injection matrix of ``bench_injection.py``, one concern per module.

``payloads`` the hostile text; ``checks`` what counts as an escape; ``evidence`` two
compactions of a core transcript; ``core`` / ``readers`` / ``langchain_agent`` /
``llama_index_agent`` the cells of each source (``adapters`` what the two agent runs
share); ``forged`` forged digest records; ``report`` the tables; ``weak`` the weakened
library of ``--weak``.
"""
