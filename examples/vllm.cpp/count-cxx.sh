#!/bin/sh
# g++, logging each compile as "worktree source" to $REDFIRST_COMPILE_LOG: how the example
# counts what each mutation rebuilt (CXX=.../count-cxx.sh mutate ...).
prev=
for a in "$@"; do
  if [ "$prev" = -c ]; then printf '%s %s\n' "$PWD" "$a" >> "$REDFIRST_COMPILE_LOG"; fi
  prev=$a
done
exec g++ "$@"
