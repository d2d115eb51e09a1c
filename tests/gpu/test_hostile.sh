#!/bin/sh
# test_hostile.sh BUILD: tests/integration/test_hostile.sh (a tenant that abuses its doorbells, then
# faults; executors' own uids) on the GPU machine's driver: the fault is a real illegal address.
set -u
build=${1:-build}
name=test_hostile_gpu
. "$(dirname "$0")/lib.sh"
gpu_require
OOO_TEST_LIBCUDA=$libcuda exec sh "$(dirname "$0")/../integration/test_hostile.sh" "$build"
