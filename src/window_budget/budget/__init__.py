"""Pure budget arithmetic: estimate, gate, slice. Imports nothing of ``summarize``."""
