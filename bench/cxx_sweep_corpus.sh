#!/bin/sh
# `mutate sweep` over one real vllm.cpp commit range that touches src/vt (issue 37): the checkout
# of examples/vllm.cpp/prepare.sh, then two commits on it that take FILE back to REV's version and
# forward again, so `--since HEAD~1` is exactly REV..HEAD on that file (the rest of the tree is
# HEAD's, which the example's gates build). Prints the sweep's --json document.
#   cxx_sweep_corpus.sh CHECKOUT REV FILE [-n JOBS]
# The CUDA path is the same sweep of a .cu file given by path, on a machine with nvcc:
#   mutate sweep --root CHECKOUT --json src/vt/cuda/FILE.cu
set -eu
root=$1 rev=$2 file=$3
shift 3
cd "$root"
g() { git -c user.name=redfirst -c user.email=redfirst@localhost -c commit.gpgsign=false \
      -c core.hooksPath=/dev/null "$@"; }
keep=$(mktemp)
cp "$file" "$keep"
git show "$rev:$file" > "$file"
g commit -q --no-verify -am "sweep base: $file as at $rev"
cp "$keep" "$file"
rm -f "$keep"
g commit -q --no-verify -am "sweep change: $file from $rev to HEAD"
exec mutate sweep --root "$root" --since HEAD~1 --json "$@"
