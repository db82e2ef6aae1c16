from __future__ import annotations

import subprocess
import sys
import textwrap


def test_import_without_llama_index_core_names_the_extra() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["llama_index.core"] = None  # what an absent package looks like
        try:
            import llama_index.memory.window_budget
        except ImportError as exc:
            print(exc)
        else:
            print("imported")
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert 'pip install "window-budget[llama-index]"' in out


def test_core_import_stays_framework_free() -> None:
    code = "import sys, window_budget; print('llama_index' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
