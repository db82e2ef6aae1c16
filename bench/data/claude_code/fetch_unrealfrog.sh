#!/usr/bin/env bash
# The UnrealFrog sessions measured by `bench_fact_retention.py --real bench/data/claude_code`:
# Claude Code sessions exported as Markdown by that project's own .claude/scripts/transcribe.py.
# Its repository has no licence file, so the files are not copied into this repo: this script
# fetches them at the commit measured into ./unrealfrog/ (git-ignored). Needs git and network.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=https://github.com/Randroids-Dojo/UnrealFrog.git
commit=dc20bb855490ec404c58fd812200f41545d293a3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$work" init -q
git -C "$work" fetch -q --depth 1 "$repo" "$commit"
mkdir -p "$here/unrealfrog"
for f in $(git -C "$work" ls-tree --name-only FETCH_HEAD .claude/transcripts/); do
    # grep reads it all: -q would close the pipe early, and pipefail would count that a failure
    if git -C "$work" show "FETCH_HEAD:$f" | grep "This session is being continued" >/dev/null; then
        git -C "$work" show "FETCH_HEAD:$f" >"$here/unrealfrog/$(basename "$f")"
    fi
done
ls "$here/unrealfrog" | wc -l | xargs echo "sessions with a compaction summary:"
