#!/bin/sh
# The corpus through `streamfilter run`: a command that prints LOG and fails (exit 1).
# Usage (with ../shared/eval/evaluate.py; its --cmd needs exit status 0, so this exits 0):
#   python ../shared/eval/evaluate.py ../shared/corpus --cmd 'sh benchmarks/run_as_command.sh {format} {query} {log}'
streamfilter run --format "$1" --query "$2" -- sh -c 'cat "$0"; exit 1' "$3"
exit 0
