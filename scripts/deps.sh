#!/bin/sh
# Installs the Debian packages axc needs to build and test, and only those
# missing.  Idempotent: with everything present it prints one line and exits.
# (libclang-rt-dev holds clang's sanitizer and libFuzzer runtimes, which the
# clang package only recommends.  hipcc and libamdhip64-dev: ROCm 5.2, whose hiprtc
# compiles the hip target's kernels in the cuda suite; the CUDA toolkit (NVRTC) is not
# in Debian's main, so the cuda suite's NVRTC cases SKIP without /usr/local/cuda.
# libopenmpi-dev and openmpi-bin: libaxrt_mpi and mpirun for data-parallel training.
# libflatbuffers-dev and flatbuffers-compiler: flatc and the headers of the TFLite reader.)
set -eu

PKGS="make gcc g++ clang libclang-rt-dev pkg-config flex bison libfl-dev libjson-c-dev \
libcmocka-dev libopenblas-dev libdnnl-dev llvm-dev python3 python3-numpy python3-torch python3-torchvision python3-venv \
gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm graphviz \
libprotobuf-c-dev protobuf-c-compiler libonnx-dev python3-onnx libonnx-testdata libflatbuffers-dev flatbuffers-compiler \
hipcc libamdhip64-dev libopenmpi-dev openmpi-bin"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "deps: all packages present"
    exit 0
fi

echo "deps: installing:$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=900 update -q
# shellcheck disable=SC2086
$SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends $missing
