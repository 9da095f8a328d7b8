#!/usr/bin/env bash
# Fetch, where pip reaches PyPI, the wheels that benchmarks/gpu/run.sh installs on a GPU machine
# without network (CPython 3.12, x86-64): the packages bgbench needs that the machine lacks, pinned
# in benchmarks/gpu/wheels.txt. Into benchmarks/gpu/wheels/ (git-ignored), which travels with the
# working tree and must stay under 64 MiB: prints its size and fails if over.
#
#   benchmarks/gpu/wheels.sh            (PYTHON names the interpreter whose pip downloads; default python3)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$here/wheels
limit_mib=64
py=${PYTHON:-python3}
rm -rf "$dest"
mkdir -p "$dest"
for req in $(sed 's/#.*//' "$here/wheels.txt"); do
  "$py" -m pip download -q --disable-pip-version-check --only-binary=:all: --no-deps --dest "$dest" \
    --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    --platform any "$req" || {
    # no wheel on the index (grad-cam publishes only an sdist): build one here, which must be pure Python
    echo "wheels.sh: no wheel of $req on the index: building one from its sdist" >&2
    "$py" -m pip wheel -q --disable-pip-version-check --no-deps --wheel-dir "$dest" "$req"
  }
done
ls -1 "$dest"
foreign=$(ls "$dest" | grep -v -e '-none-any\.whl$' -e '-cp312-.*x86_64\.whl$' -e '-abi3-.*x86_64\.whl$' || true)
if [ -n "$foreign" ]; then
  echo "wheels.sh: error: not installable on CPython 3.12 x86-64: $foreign" >&2
  exit 1
fi
size=$(du -sk "$dest" | cut -f1)
mib="$(( size / 1024 )).$(( size % 1024 * 10 / 1024 ))"
echo "benchmarks/gpu/wheels/: $(ls "$dest" | wc -l) wheels, $mib MiB (limit $limit_mib MiB)"
if [ "$size" -gt $(( limit_mib * 1024 )) ]; then
  echo "wheels.sh: error: the wheels take more than ${limit_mib} MiB" >&2
  exit 1
fi
