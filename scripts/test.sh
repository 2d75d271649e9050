#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs the system packages the
# tests use (apt-get, when run as root; otherwise it names what is missing and
# stops), builds the workspace with the features the tests exercise, and runs
# every test. README.md's test command runs this script; so does .ci/run.
#
# Add a package here (and only here) when a test starts needing one: the
# list is the single record of what the suite depends on.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian package -> a file or command that shows it is installed.
multiarch="/usr/lib/$(uname -m)-linux-gnu"
packages=(
    "build-essential:/usr/bin/cc"
    "pkg-config:/usr/bin/pkg-config"
    "libhwloc-dev:/usr/include/hwloc.h"
    "iproute2:/usr/sbin/ip"
    "mpich:/usr/bin/mpiexec.hydra"
    # PMIx bootstrap (loaded at run time) under Open MPI's mpirun and
    # Slurm's srun on the one-node cluster tests/src/slurm.rs starts.
    "libpmix2:$multiarch/libpmix.so.2"
    "libpmix-dev:$multiarch/pkgconfig/pmix.pc"
    "openmpi-bin:/usr/bin/mpirun.openmpi"
    "munge:/usr/sbin/munged"
    "slurmctld:/usr/sbin/slurmctld"
    "slurmd:/usr/sbin/slurmd"
    "slurm-client:/usr/bin/srun"
    # The ofi conduit loads libfabric at run time; fi_info lists providers.
    "libfabric1:$multiarch/libfabric.so.1"
    "libfabric-bin:/usr/bin/fi_info"
)

missing=()
for entry in "${packages[@]}"; do
    pkg=${entry%%:*}
    probe=${entry#*:}
    [ -e "$probe" ] || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "test.sh: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "test.sh: the tests need these Debian packages, which are missing: ${missing[*]}" >&2
        echo "test.sh: install them (sudo apt-get install ${missing[*]}) or run as root" >&2
        exit 1
    fi
fi

cargo build --release --workspace
# Each conduit is a cargo feature: every one builds alone.
for conduit in smp ipv6 fpga ofi; do
    cargo check --quiet -p conduits --lib --no-default-features --features "$conduit"
done
cargo test --release --workspace
