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
    # The RTL core (hw/): its Verilator model, lint and Yosys synthesis.
    "verilator:/usr/bin/verilator"
    "yosys:/usr/bin/yosys"
    # A test job that times out shows its processes' stacks (tests/src/hung.rs).
    "gdb:/usr/bin/gdb"
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

# Yosys synthesises the RTL core (hw/scripts/synth.sh: generic cells, the
# hierarchy kept; about three minutes of one core) beside the build and
# tests. FSHMEM_HW_SYNTH=elaborate only reads, elaborates and checks it
# (hw/scripts/elaborate.ys, about half a minute).
synth_out=$(mktemp -d)
hw_synth=${FSHMEM_HW_SYNTH:-full}
if [ "$hw_synth" = full ]; then
    FSHMEM_HW_BUILD="$synth_out" bash hw/scripts/synth.sh >"$synth_out/stdout" 2>&1 &
else
    (cd hw && yosys -q -l "$synth_out/synth.log" \
        -p "script scripts/elaborate.ys; tee -q -o $synth_out/synth_stat.txt stat") \
        >"$synth_out/stdout" 2>&1 &
fi
synth_pid=$!
# (errexit holds inside the trap: a Yosys already gone must not fail it.)
trap 'pkill -P "$synth_pid" 2>/dev/null || true; kill "$synth_pid" 2>/dev/null || true; rm -rf "$synth_out"' EXIT

# devsim with the RTL core of hw/ as devsim-rtl (tests/tests/fpga_rtl.rs);
# first, so that the default build below leaves `devsim` without it.
cargo build --release -p devsim --features rtl
cargo build --release --workspace
# Each conduit is a cargo feature: every one builds alone.
for conduit in smp ipv6 fpga ofi; do
    cargo check --quiet -p conduits --lib --no-default-features --features "$conduit"
done
# As root every package above is installed and network namespaces can be
# made: a test that finds something missing fails instead of skipping.
if [ "$(id -u)" = 0 ]; then
    export FSHMEM_TESTS_STRICT=1
fi
cargo test --release --workspace
# The RTL core (hw/): its Verilator model against the reference engine and
# the spec's examples, and `verilator --lint-only -Wall`.
cargo test --release -p fshmem-hw --features verilator
if ! wait "$synth_pid" || ! grep -q "Number of cells" "$synth_out/synth_stat.txt"; then
    echo "test.sh: Yosys could not elaborate or synthesise hw/:" >&2
    tail -n 40 "$synth_out/stdout" "$synth_out/synth.log" >&2 || true
    exit 1
fi
echo "test.sh: Yosys on hw/ (fshmem_core; FSHMEM_HW_SYNTH=$hw_synth):"
if [ "$hw_synth" = full ]; then
    cat "$synth_out/stdout"
else
    grep -E "Number of cells|fs_sdp_ram" "$synth_out/synth_stat.txt"
fi
