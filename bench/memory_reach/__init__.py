"""After many compactions, can the agent still see or fetch what mattered? (issue 22, core part)

Generated coding sessions plant at least 120 facts in every stretch of work ("generation"):
the objective (first user message), constraints said in a trailing clause of long user
messages ("…, and never touch `migrations/`"), later asks, created and edited files with
near-identical names (``services/billing/api_07.py`` beside ``api_17.py``), distinctive
shell commands among many ``ls`` / ``git status`` / ``pytest -q``, errors (some fixed later,
some open), decisions ("switched to X because Y"), renames stated in prose, plan items —
mixed with many similar unplanted ones (files only read, commands re-run, questions and
musings, symptoms that sound like rules, a superseded plan) and long tool outputs. The first
generation is a head of about 50k, 110k or 230k tokens (by seed), each later one about 50k.

Every generation is appended turn by turn to a condenser with the network-free digest and an
``InProcessMemoryStore`` (``condenser.run_sync(history)`` after each turn, as an agent loop
calls it; the gate fires on its own in small windows), then compacted once more at its end
(``force=True``, as a user's ``/compact`` between tasks does), so after generation N at least
N compactions happened. After 1, 5 and 10 generations, for every fact planted so far:

* **digest**: its distinguishing text is in the digest message's text (what the model sees
  without a call);
* **no recall**: in the digest or in the kept tail (what a weak implementation, one without
  a memory tier, offers);
* **reachable**: that, or returned by recall — ``recall_text(kind=K, page=p)`` for p <= 3
  contains it, or ``recall_text(query=<one distinguishing word>)`` (top 5) does (in its
  quoted lines: the header echoes the query).

Plan items a later plan superseded are reported apart (``plan (earlier)``). Recall is the
library's; its in-process store answers word searches from an index (the protocol's optional
``search``), checked on every run to answer as the plain path, which re-reads the whole archive
on every search (a run makes thousands).

Files are also reported as edited (the session found them) and created, errors as open (no
later run fixed them) and resolved: the objective, the constraints, the edited files and the
open errors are the digest's floor, the last facts to leave it.

Why it can score low: the digest is bounded (``pipeline.digest_budget``: 6,000 tokens at
128k) while the ledger grows by 120+ facts per generation; a long constraint sentence may be
cut before its trailing clause; similar names must not count for each other (``api_07`` is
not ``api_17``); a kind's listing shows 3 pages of 25; a word search returns 5 facts and 5
messages, and stems shared by many files rank together.

Also: a digest-budget sweep at the 128k window (``BudgetPolicy(digest_max_tokens=B)``), the
digest's size and its record's size (``json.dumps(digest.facts)``, counted).

Run:  python bench/bench_memory_reach.py [--seeds 3] [--quick] [--check] [-j N] [--json PATH]
(``--check`` only verifies the generator — >= 120 planted facts in the first head, each one
present in the generated messages — and the store's word index against plain recall.) About
16 CPU minutes for 3 seeds, spread over ``-j`` worker processes; --quick about 5.

The parts: ``names`` (vocabulary, the planted-fact record), ``generator`` (the sessions),
``recall`` (the library's recall as the bench asks it), ``scoring`` (found or not, one
trajectory), ``report`` (medians, tables), ``cli``.
"""
