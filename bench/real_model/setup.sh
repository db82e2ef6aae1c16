#!/usr/bin/env bash
# Make a real small instruct model runnable on a CPU-only machine for window-budget's
# benchmarks: llama-cpp-python (built from source) in a virtual environment of its own,
# and Qwen2.5-Coder 1.5B Instruct Q4_K_M (GGUF, 1.1 GB) beside it. Nothing goes in the repo.
#
#   bench/real_model/setup.sh            # everything (first run: 12-17 min on 2 shared cores)
#   bench/real_model/setup.sh lib        # only the venv with llama-cpp-python
#   bench/real_model/setup.sh model      # only the model file
#
# Re-runnable: a step whose result is already in place (the pinned versions import; the
# model's SHA-256 matches) is skipped. On a first full run the library builds in the
# background while the model downloads.
#
# Environment:
#   WINDOW_BUDGET_MODEL_HOME  where the venv and the model go
#                             (default: ~/.cache/window-budget-model)
#   PROJECT_PYTHON            the project's dev interpreter (default: the active venv's,
#                             else the repo's .venv, else the main worktree's .venv); the
#                             venv is made from the same Python and gets its langchain-core
#   CMAKE_ARGS                passed to llama.cpp's build (default: none, so llama.cpp's
#                             own default GGML_NATIVE=ON: tuned for this machine's CPU)
#   CFLAGS, CXXFLAGS          passed on, with -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 added:
#                             llama.cpp's AMX kernels die with SIGILL (tilezero) on this
#                             machine's CPUs, which advertise AMX
#   CMAKE_BUILD_PARALLEL_LEVEL  compile jobs (default 2)
#   LLAMA_CPP_PYTHON_VERSION  default 0.3.36
#   LANGCHAIN_CORE_VERSION    default: the project's, else 1.8.3
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
model_home=${WINDOW_BUDGET_MODEL_HOME:-$HOME/.cache/window-budget-model}
venv=$model_home/venv
llama_version=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
step=${1:-all}

case $step in
all | lib | model) ;;
*)
    echo "usage: $0 [all|lib|model]" >&2
    exit 2
    ;;
esac

say() { echo "[setup] $*"; }

mkdir -p "$model_home/logs"
exec 9>"$model_home/.setup.lock"
if ! flock -n 9; then
    say "another setup.sh is running on $model_home; wait for it" >&2
    exit 1
fi

# The project's interpreter: the venv must be of the same Python (bench code imports
# llama_cpp from it) and carry the same langchain-core (smoke.py also runs from it).
project_python=${PROJECT_PYTHON:-}
if [[ -z $project_python ]]; then
    common=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    for candidate in "${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}" "$repo/.venv/bin/python" \
        "${common:+$(dirname "$common")/.venv/bin/python}"; do
        if [[ -n $candidate && -x $candidate ]]; then
            project_python=$candidate
            break
        fi
    done
fi
if [[ -n $project_python ]]; then
    say "project interpreter: $project_python"
    base_python=$project_python
    lc_detected=$("$project_python" -c \
        'import importlib.metadata as m; print(m.version("langchain-core"))' 2>/dev/null || true)
else
    say "no project venv found (set PROJECT_PYTHON to choose one); using python3"
    base_python=python3
    lc_detected=
fi
langchain_version=${LANGCHAIN_CORE_VERSION:-${lc_detected:-1.8.3}}

if [[ ! -x $venv/bin/python ]]; then
    say "creating $venv"
    "$base_python" -m venv "$venv"
fi
want_py=$("$base_python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
have_py=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [[ $want_py != "$have_py" ]]; then
    say "$venv is Python $have_py but the project runs $want_py: remove it and re-run" >&2
    exit 1
fi

# A native build fits one CPU and one set of flags: the venv records both, and a change of
# either rebuilds.
no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
build_cflags="${CFLAGS:+$CFLAGS }$no_amx"
build_cxxflags="${CXXFLAGS:+$CXXFLAGS }$no_amx"
cpu=$( (grep -m1 '^model name' /proc/cpuinfo && grep -m1 '^flags' /proc/cpuinfo) 2>/dev/null |
    sha256sum | cut -c1-16)
stamp_file=$venv/.llama-cpp-build
stamp="llama-cpp-python=$llama_version
CMAKE_ARGS=${CMAKE_ARGS:-}
CFLAGS=$build_cflags
CXXFLAGS=$build_cxxflags
cpu=$cpu"

lib_ready() {
    [[ -f $stamp_file && $(cat "$stamp_file") == "$stamp" ]] || return 1
    "$venv/bin/python" - "$llama_version" "$langchain_version" <<'EOF' 2>/dev/null
import importlib.metadata as m
import sys

import langchain_core  # noqa: F401
import llama_cpp  # noqa: F401

sys.exit(
    m.version("llama_cpp_python") != sys.argv[1] or m.version("langchain-core") != sys.argv[2]
)
EOF
}

build_lib() {
    # llama-cpp-python has no CPU wheel on the registry: pip compiles llama.cpp (12-17 min
    # on 2 cores). --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS, so a cached
    # build could come back with other flags or for another CPU. Uninstalled first, since
    # pip keeps an installed llama-cpp-python of the same version however it was built.
    rm -f "$stamp_file"
    "$venv/bin/python" -m pip uninstall --yes llama-cpp-python
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} CMAKE_ARGS=${CMAKE_ARGS:-} \
        CFLAGS=$build_cflags CXXFLAGS=$build_cxxflags \
        nice -n 19 "$venv/bin/python" -m pip install --no-cache-dir --verbose \
        "llama-cpp-python==$llama_version" "langchain-core==$langchain_version"
    "$venv/bin/python" -c 'import llama_cpp; print("llama_cpp", llama_cpp.__version__)'
    printf '%s\n' "$stamp" >"$stamp_file"
}

# One real decode: a library that loads but cannot run on this CPU (SIGILL) shows up here,
# not in the first benchmark.
check_run() {
    nice -n 19 "$venv/bin/python" - "$model_home/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" <<'EOF'
import sys

from llama_cpp import Llama

llm = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, seed=0, verbose=False)
out = llm.create_chat_completion(
    [{"role": "user", "content": "Say OK."}], max_tokens=4, temperature=0.0
)
print("[setup] check: the model answers:", repr(out["choices"][0]["message"]["content"]))
EOF
}

fetch_model() {
    nice -n 19 "$venv/bin/python" "$here/fetch_model.py" --dest "$model_home"
}

lib_pid=
lib_log=
if [[ $step != model ]]; then
    if lib_ready; then
        say "llama-cpp-python $llama_version and langchain-core $langchain_version: in place"
    else
        lib_log=$model_home/logs/build-$(date +%Y%m%d-%H%M%S).log
        say "building llama-cpp-python $llama_version (CMAKE_ARGS='${CMAKE_ARGS:-}'),"
        say "  langchain-core $langchain_version; log: $lib_log"
        build_lib >"$lib_log" 2>&1 &
        lib_pid=$!
    fi
fi

model_rc=0
if [[ $step != lib ]]; then
    fetch_model || model_rc=$?
fi

lib_rc=0
if [[ -n $lib_pid ]]; then
    start=$SECONDS
    wait "$lib_pid" || lib_rc=$?
    if ((lib_rc != 0)); then
        tail -n 40 "$lib_log" >&2
        say "llama-cpp-python build FAILED (exit $lib_rc); full log: $lib_log" >&2
    else
        say "llama-cpp-python built (waited $((SECONDS - start)) s after the model step)"
    fi
fi
if ((model_rc != 0)); then
    say "model fetch FAILED (exit $model_rc)" >&2
fi
if ((lib_rc != 0 || model_rc != 0)); then
    exit 1
fi
if [[ $step == all ]]; then
    if ! check_run; then
        say "the built library cannot run the model here: see above; CMAKE_ARGS/CFLAGS" >&2
        say "  to change the build (then this script rebuilds), e.g." >&2
        say "  CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON\"" >&2
        exit 1
    fi
fi

say "done. venv: $venv"
say "      model: $model_home/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
say "smoke check: ${project_python:-python} bench/real_model/smoke.py"
