"""Read transcripts people already have into core messages, and write them back.

Formats (the key is what ``format=`` and the command line's ``--from`` take):

========================  =====================================================
``openai``                Chat Completions message list (JSON; or a run object with
                          ``messages`` / ``traj``)
``openai-jsonl``          the same, one message a line
``anthropic``             Anthropic Messages ``{system?, messages}``
``claude-code``           Claude Code session JSONL
``pi``                    pi coding agent session JSONL
``langchain``             LangChain ``messages_to_dict`` dump
``llama-index``           LlamaIndex ``ChatMessage.model_dump(mode="json")`` list
``openhands``             OpenHands event stream (an ``output.jsonl`` of runs, a run
                          object with ``history``, or a list of events)
``tau-bench``             tau-bench result file: a list of runs, each with a ``traj``
``swe-agent``             SWE-agent ``.traj`` file (``history``, else ``trajectory``)
``json``                  this library's own JSON (``message_to_dict`` records)
========================  =====================================================

JSONL formats are read line by line, so a large session is never held as text; JSON
documents are parsed whole. System prompts come back apart from the messages
(:attr:`Transcript.system`): the core has no system role, so count them as pinned tokens.

>>> import io
>>> t = read_transcript(io.StringIO('[{"role": "system", "content": "be brief"},'
...                                 ' {"role": "user", "content": "hi"}]'))
>>> t.format, t.system, t.messages
('openai', ('be brief',), (UserMessage(content='hi', timestamp=None, role='user'),))
"""

from window_budget.readers._base import PICK_FORMAT as PICK_FORMAT
from window_budget.readers._base import PICK_RUN as PICK_RUN
from window_budget.readers._base import SKIP_BAD as SKIP_BAD
from window_budget.readers._base import BadRecord, ReadError, Transcript
from window_budget.readers._detect import detect_format
from window_budget.readers._files import iter_transcript_files, read_transcript, write_transcript
from window_budget.readers._formats import BOUNDARY_FORMATS as BOUNDARY_FORMATS
from window_budget.readers._formats import FORMATS
from window_budget.readers._formats import RUN_FORMATS as RUN_FORMATS
from window_budget.readers._formats import TRANSCRIPT_SUFFIXES as TRANSCRIPT_SUFFIXES

__all__ = [
    "FORMATS",
    "BadRecord",
    "ReadError",
    "Transcript",
    "detect_format",
    "iter_transcript_files",
    "read_transcript",
    "write_transcript",
]
