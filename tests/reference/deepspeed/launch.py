"""Runs one variant on DeepSpeed: W rank processes over gloo on loopback, bounded in time.

  launch.py VARIANT.json OUT_DIR --site DIR [--timeout S]

Each rank is its own process group; on a timeout or a failed rank every rank is killed, so
nothing is left running. Writes OUT_DIR/trace_rank<R>.jsonl, info_rank<R>.json, log_rank<R>.txt.
Exit status: 0 when every rank finished, 1 otherwise (the reason on one line).
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill_all(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p in procs:
        p.wait()


def launch(spec_path, out, site, timeout):
    with open(spec_path) as f:
        spec = json.load(f)
    world = spec["world"]
    # Ranks per node as DeepSpeed's CPU accelerator counts devices (LOCAL_SIZE), and MiCS's
    # NDEV_PER_NODE: the whole world unless the spec places fewer on each node.
    local = spec.get("ranks_per_node", world)
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, DS_ACCELERATOR="cpu", DS_BUILD_OPS="0", WORLD_SIZE=str(world),
               LOCAL_SIZE=str(local), LOCAL_WORLD_SIZE=str(local), NDEV_PER_NODE=str(local), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([site, HERE]),
               PYTHONDONTWRITEBYTECODE="1")
    procs, logs = [], []
    try:
        for rank in range(world):
            log = open(os.path.join(out, f"log_rank{rank}.txt"), "w")
            logs.append(log)
            procs.append(subprocess.Popen(
                [sys.executable, os.path.join(HERE, "rank.py"), spec_path, out],
                env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank)), stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
        deadline = time.monotonic() + timeout
        while True:
            codes = [p.poll() for p in procs]
            failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                return f"rank {failed[0]} exited with status {codes[failed[0]]} " \
                       f"(log: {os.path.join(out, f'log_rank{failed[0]}.txt')})"
            if all(c == 0 for c in codes):
                return ""
            if time.monotonic() > deadline:
                return f"timed out after {timeout} s"
            time.sleep(0.1)
    finally:
        kill_all(procs)
        for log in logs:
            log.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("out")
    parser.add_argument("--site", required=True)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    problem = launch(args.spec, args.out, args.site, args.timeout)
    if problem:
        print(f"launch: {args.spec}: {problem}")
        sys.exit(1)


if __name__ == "__main__":
    main()
