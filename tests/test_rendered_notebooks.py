"""The notebooks as a reader sees them: rendered to HTML, and one page opened in Chromium.

The executed notebooks (run once, by ``test_notebooks.py``'s :func:`executed`) are
rendered with nbconvert. Each page must carry its figures and the library's displays,
no error output, and no bare object repr where a display exists. The core tour's page is
then loaded in headless Chromium (the platform's ``chromium`` package): the screenshot
must not be blank and the page the browser built must show no traceback. Chromium is
looked up on PATH and at ``/usr/bin/chromium``; without it the test is skipped locally
and fails under CI (``CI=true``), where ``.ci/run`` installs it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.test_notebooks import NOTEBOOKS, PATHS, executed

nbformat = pytest.importorskip("nbformat")
nbconvert = pytest.importorskip("nbconvert")

# Displays (the library's HTML) and figures (PNG) each page must carry at least.
EXPECTED = {
    "core_tour.ipynb": (5, 3),
    "policy_explorer.ipynb": (1, 1),
    "langchain.ipynb": (4, 1),
    "llama_index.ipynb": (4, 1),
}
# A bare repr of something that has a display: a dataclass repr or a figure shown as text.
BARE_REPR = re.compile(
    r"^\s*(<Figure size|(CondenseResult|UsageReport|Transcript|Table|Timeline"
    r"|LangChainResult|UsagePoint)\()"
)
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    # The page links a CDN (require.js, MathJax): fail those lookups at
    # once, so the check is the same with and without a network.
    "--host-resolver-rules=MAP * ~NOTFOUND",
]


def render(notebook: Any) -> str:
    """The notebook as nbconvert's HTML page (the ``lab`` template, images embedded)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Jupyter plumbing's deprecation notices
        exporter = nbconvert.HTMLExporter(template_name="lab")
        body, _ = exporter.from_notebook_node(notebook)
    return str(body)


def output_problems(notebook: Any) -> list[str]:
    """Error outputs, tracebacks on stderr, and bare reprs where a display exists."""
    problems = []
    for number, cell in enumerate(notebook.cells):
        for out in cell.get("outputs", []):
            kind = out["output_type"]
            if kind == "error":
                problems.append(f"cell {number}: {out['ename']}: {out['evalue']}")
            elif kind == "stream":
                if "Traceback" in out["text"] or BARE_REPR.search(out["text"]):
                    problems.append(f"cell {number}: {out['name']} shows {out['text'][:80]!r}")
            else:
                data = out.get("data", {})
                plain = data.get("text/plain", "")
                if not {"text/html", "image/png"} & set(data) and BARE_REPR.search(plain):
                    problems.append(f"cell {number}: a bare repr {plain[:80]!r}")
    return problems


def page_problems(page: str) -> list[str]:
    """What a reader would see that is wrong on a rendered page (HTML or a browser's DOM)."""
    problems = []
    if "Traceback" in page:
        problems.append("the page shows a traceback")
    if 'data-mime-type="application/vnd.jupyter.stderr"' in page:
        problems.append("the page shows error output")
    if "&lt;Figure size" in page:
        problems.append("a figure is shown as text")
    return problems


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_rendered_page_has_figures_displays_and_no_errors(path: Path) -> None:
    notebook = executed(path)
    assert output_problems(notebook) == []
    page = render(notebook)
    assert page_problems(page) == []
    displays, figures = EXPECTED[path.name]
    assert page.count('class="window-budget"') >= displays
    assert len(re.findall(r'<img[^>]+src="data:image/png;base64,', page)) >= figures


def test_the_checks_catch_a_broken_notebook() -> None:
    nbclient = pytest.importorskip("nbclient")
    v4 = nbformat.v4
    notebook = v4.new_notebook(
        cells=[
            v4.new_code_cell(
                "%matplotlib inline\nfrom matplotlib.figure import Figure\n"
                "fig = Figure(); fig.subplots().plot([1, 2])\n"
                "from window_budget import UserMessage\n"
                "from window_budget.tools.report import analyze\n"
                "print(repr(analyze([UserMessage('hi')], 100)))"
            ),
            v4.new_code_cell(
                "import sys\nfrom IPython.display import display\ndisplay(fig.axes[0])"
            ),
            v4.new_code_cell("1 / 0"),
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nbclient.NotebookClient(
            notebook, timeout=120, kernel_name="python3", allow_errors=True
        ).execute()
    problems = output_problems(notebook)
    assert any("ZeroDivisionError" in p for p in problems)
    assert any("UsageReport(" in p for p in problems)
    assert "the page shows a traceback" in page_problems(render(notebook))


# ------------------------------------------------------------------ in a browser


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and Path("/usr/bin/chromium").exists():
        found = "/usr/bin/chromium"
    if found is None:
        message = (
            "Chromium is not installed (apt-get install -y chromium), so the rendered "
            "page cannot be checked in a browser"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def browse(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Load ``page`` in headless Chromium with a fresh profile; ``args`` say what to keep."""
    return subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )


def screenshot_problems(png: Path) -> list[str]:
    """Why a screenshot looks blank: almost no ink, or hardly any colours."""
    image = pytest.importorskip("matplotlib.image")
    pixels = image.imread(png)[..., :3]
    ink = float((pixels.min(axis=2) < 0.9).mean())
    colours = len({tuple(p) for p in (pixels[::7, ::7].reshape(-1, 3) * 255).astype(int)})
    problems = []
    if ink < 0.02:
        problems.append(f"the screenshot is blank ({ink:.1%} of it is not white)")
    if colours < 40:
        problems.append(f"the screenshot has only {colours} colours")
    return problems


def test_a_rendered_page_in_chromium_is_not_blank_and_shows_no_traceback(tmp_path: Path) -> None:
    browser = chromium()
    assert browser
    page = tmp_path / "core_tour.html"
    page.write_text(render(executed(NOTEBOOKS / "core_tour.ipynb")), encoding="utf-8")
    shot = tmp_path / "core_tour.png"
    browse(page, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2400")
    assert shot.stat().st_size > 0
    assert screenshot_problems(shot) == []
    dom = browse(page, tmp_path / "profile-dom", "--dump-dom").stdout
    assert page_problems(dom) == []
    # The browser built the library's displays and the figures.
    assert "window-budget · condense result" in dom
    assert "window-budget · usage report" in dom
    assert dom.count("data:image/png;base64,") >= 3
    assert "window-budget · fact ledger" in dom
    blank = tmp_path / "blank.html"
    blank.write_text("<html><body></body></html>", encoding="utf-8")
    blank_shot = tmp_path / "blank.png"
    browse(blank, tmp_path / "profile-blank", f"--screenshot={blank_shot}", "--window-size=800,600")
    assert screenshot_problems(blank_shot)  # the check itself can fail
