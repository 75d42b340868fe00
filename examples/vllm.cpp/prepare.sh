#!/bin/sh
# Make a vllm.cpp checkout at d85906ae with this example laid over it, committed on a local
# branch (HEAD, so mutate's worktrees hold it): prepare.sh TARBALL DEST
#   TARBALL: vllm.cpp.git.tar.gz (a tarball of the bare repository); DEST: a new folder.
# Prints the checkout's path.
set -eu
tarball=$1 dest=$2 here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dest/bare"
tar -xzf "$tarball" -C "$dest/bare"
bare=$(dirname "$(find "$dest/bare" -maxdepth 3 -name HEAD -type f | head -n 1)")
git clone -q --no-checkout "$bare" "$dest/vllm.cpp"
cd "$dest/vllm.cpp"
git update-ref refs/heads/redfirst-example d85906ae
git symbolic-ref HEAD refs/heads/redfirst-example
git read-tree d85906ae
# Two large tokenizer goldens are absent from the tarball: the example's commit leaves them out.
git ls-files -s | awk '{print $2}' | git cat-file --batch-check | awk '$2 == "missing" {print $1}' > .git/missing
git ls-files -s | grep -F -f .git/missing | cut -f 2 | while read -r path; do git rm -q --cached -- "$path"; done
git checkout-index -a -f
mkdir -p redfirst
cp -R "$here/gates" "$here/mutations" "$here/vt.mk" redfirst/
cp "$here/redfirst.yaml" .
git add redfirst redfirst.yaml
git -c user.name=redfirst -c user.email=redfirst@localhost -c commit.gpgsign=false -c core.hooksPath=/dev/null \
    commit -q --no-verify -m "redfirst example: gates and mutations over tests/vt (without the absent goldens)"
echo "$dest/vllm.cpp"
