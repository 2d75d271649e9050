#!/bin/sh
# Installs fshmem's launcher, compiler wrappers, C library and headers into
# PREFIX (bin/, lib/, include/). Build first:
#   cargo build --release --workspace && sh scripts/install.sh PREFIX
set -eu
if [ $# -ne 1 ]; then
    echo "usage: sh scripts/install.sh PREFIX" >&2
    exit 2
fi
prefix=$1
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FSHMEM_BUILD_DIR:-$root/target/release}
for f in oshrun oshcc oshcxx devsim libshmem.so libshmem.a; do
    if [ ! -f "$build/$f" ]; then
        echo "install.sh: $build/$f is missing; run cargo build --release --workspace first" >&2
        exit 1
    fi
done
mkdir -p "$prefix/bin" "$prefix/lib" "$prefix/include"
# devsim beside oshrun: `oshrun --conduit fpga` starts its boards with it.
for f in oshrun oshcc oshcxx devsim; do
    cp -f "$build/$f" "$prefix/bin/$f"
done
ln -sf oshcxx "$prefix/bin/oshc++"
cp -f "$build/libshmem.so" "$build/libshmem.a" "$prefix/lib/"
for h in shmem.h shmem-api.h shmem-cxx.h shmemx.h pshmem.h; do
    cp -f "$root/shmem/include/$h" "$prefix/include/"
done
echo "installed fshmem into $prefix"
