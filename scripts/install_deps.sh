#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages zerotrain needs, only those missing.
# As root: apt-get (waiting for the dpkg lock). Otherwise: one line naming the
# command to run. Optional packages (OpenBLAS, sentencepiece, PCRE2, bible-kjv, torch,
# clang and its libFuzzer runtime for `make fuzz` and tests/e2e/fuzz_smoke.sh)
# that cannot be installed (no network, as on the GPU machine) are skipped with
# a notice; the build falls back without them.
set -u
required=(libyaml-cpp-dev catch2 libopenmpi-dev openmpi-bin pkg-config zlib1g-dev)
optional=(libopenblas-dev libsentencepiece-dev libpcre2-dev bible-kjv python3-torch python3-numpy python3-matplotlib iproute2 kmod lcov clang libclang-rt-dev)

have() {  # a package counts as present when its files are, whatever installed them
  case "$1" in
    libyaml-cpp-dev) pkg-config --exists yaml-cpp ;;
    catch2) [ -e /usr/include/catch2/catch.hpp ] || [ -e /usr/include/catch2/catch_all.hpp ] || [ -e /usr/local/include/catch2/catch_all.hpp ] ;;
    libopenmpi-dev) command -v mpicxx >/dev/null ;;
    openmpi-bin) command -v mpirun >/dev/null ;;
    pkg-config) command -v pkg-config >/dev/null ;;
    zlib1g-dev) [ -e /usr/include/zlib.h ] ;;
    libopenblas-dev) pkg-config --exists openblas ;;
    libsentencepiece-dev) [ -e /usr/include/sentencepiece_trainer.h ] ;;
    libpcre2-dev) pkg-config --exists libpcre2-8 ;;
    bible-kjv) command -v bible >/dev/null ;;
    python3-torch) /usr/bin/python3 -c 'import torch' 2>/dev/null ;;
    python3-numpy) /usr/bin/python3 -c 'import numpy' 2>/dev/null ;;
    python3-matplotlib) /usr/bin/python3 -c 'import matplotlib' 2>/dev/null ;;
    iproute2) command -v ip >/dev/null && command -v tc >/dev/null ;;  # scripts/cluster.sh
    kmod) command -v modprobe >/dev/null ;;  # loads sch_netem for cluster.sh's link delays
    lcov) command -v lcov >/dev/null && command -v genhtml >/dev/null ;;  # make coverage
    clang) command -v clang++ >/dev/null ;;  # the fuzz targets (fuzz.mk)
    # libFuzzer's runtime, where clang looks for it (Debian 12: libclang-rt-14-dev)
    libclang-rt-dev) [ -e "$(clang++ -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-$(uname -m).a" ] ;;
    *) dpkg -s "$1" >/dev/null 2>&1 ;;
  esac
}

missing_req=(); missing_opt=()
for p in "${required[@]}"; do have "$p" || missing_req+=("$p"); done
for p in "${optional[@]}"; do have "$p" || missing_opt+=("$p"); done
[ ${#missing_req[@]} -eq 0 ] && [ ${#missing_opt[@]} -eq 0 ] && exit 0

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 "$@" >/dev/null
}

if [ "$(id -u)" -ne 0 ]; then
  if [ ${#missing_req[@]} -gt 0 ]; then
    echo "zerotrain: missing packages; run: sudo apt-get install -y ${missing_req[*]} ${missing_opt[*]}" >&2
    exit 1
  fi
  echo "zerotrain: optional packages missing (${missing_opt[*]}); for all features run: sudo apt-get install -y ${missing_opt[*]}" >&2
  exit 0
fi

stamp=/var/lib/apt/periodic/zerotrain-updated
if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440 2>/dev/null)" ]; then
  echo "zerotrain: apt-get update (installing: ${missing_req[*]} ${missing_opt[*]})"
  if apt-get update -q -o DPkg::Lock::Timeout=600 >/dev/null 2>&1; then mkdir -p "$(dirname "$stamp")" && touch "$stamp"; fi
fi
if [ ${#missing_req[@]} -gt 0 ]; then
  apt_install "${missing_req[@]}" || { echo "zerotrain: apt-get install ${missing_req[*]} failed" >&2; exit 1; }
fi
for p in "${missing_opt[@]}"; do
  apt_install "$p" 2>/dev/null || echo "zerotrain: optional package $p unavailable; continuing without it"
done
exit 0
