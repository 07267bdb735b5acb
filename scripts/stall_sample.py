#!/usr/bin/python3
"""Sample every process of an emulated cluster (scripts/cluster.sh) while it runs.

  scripts/stall_sample.py --prefix P --out FILE.jsonl [--interval 0.05] [--duration S]

Every INTERVAL seconds, one JSON line: for every thread of every process in the
cluster's node namespaces, its state (R/S/D/T), utime and stime (clock ticks),
wchan, the syscall it is in (number, or -1 / running), and schedstat (ns on the
CPU, ns runnable but waiting, timeslices); per node namespace the TCP counters
of /proc/PID/net/{snmp,netstat}; the machine's /proc/stat cpu line and
procs_running; every 0.5 s, utime and stime of every process on the machine
(who else had the CPUs); the kernel stack of every thread (/proc/.../stack). A second thread
runs tc -s qdisc on every link end once a second (drops, overlimits, backlog). Ends after
DURATION seconds or when no process is left in the cluster.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

TCP_KEYS = {
    "Tcp": ["ActiveOpens", "PassiveOpens", "AttemptFails", "RetransSegs", "OutRsts"],
    "TcpExt": ["ListenOverflows", "ListenDrops", "TCPSynRetrans", "TCPTimeouts", "TCPLossProbes",
               "TCPBacklogDrop", "TCPReqQFullDrop", "TCPReqQFullDoCookies", "SyncookiesSent"],
}


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def namespaces(prefix):
    """{name: inode of the namespace} for /run/netns/PREFIX*."""
    try:
        names = sorted(os.listdir("/run/netns"))
    except OSError:
        return {}
    return {n: os.stat(f"/run/netns/{n}").st_ino for n in names if n.startswith(prefix)}


def pids_by_namespace(inodes):
    """Scans /proc without starting a process: a stalled `ip` must not stall the sampler."""
    by_ino = {ino: name for name, ino in inodes.items()}
    got = {name: [] for name in inodes}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            ino = os.stat(f"/proc/{d}/ns/net").st_ino
        except OSError:
            continue
        if ino in by_ino:
            got[by_ino[ino]].append(int(d))
    return got


def all_processes():
    """{pid: [comm, net namespace inode, utime, stime]} of every process: who
    else had the CPUs while the cluster stood still."""
    got = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        stat = read(f"/proc/{d}/stat")
        if stat is None:
            continue
        f = stat[stat.rindex(")") + 2:].split()
        try:
            ino = os.stat(f"/proc/{d}/ns/net").st_ino
        except OSError:
            ino = 0
        got[d] = [stat[stat.index("(") + 1:stat.rindex(")")], ino, int(f[11]), int(f[12])]
    return got


def tcp_counters(pid):
    got = {}
    for name in ("snmp", "netstat"):
        text = read(f"/proc/{pid}/net/{name}")
        if text is None:
            return None
        lines = text.splitlines()
        for head, vals in zip(lines[0::2], lines[1::2]):
            section, keys = head.split(":", 1)
            if section not in TCP_KEYS:
                continue
            for k, v in zip(keys.split(), vals.split(":", 1)[1].split()):
                if k in TCP_KEYS[section]:
                    got[k] = int(v)
    return got


def task_sample(pid, tid):
    stat = read(f"/proc/{pid}/task/{tid}/stat")
    if stat is None:
        return None
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    f = stat[stat.rindex(")") + 2:].split()
    sysc = (read(f"/proc/{pid}/task/{tid}/syscall") or "?").split()
    sched = (read(f"/proc/{pid}/task/{tid}/schedstat") or "0 0 0").split()
    stack = [l.split()[-1].split("+")[0] for l in (read(f"/proc/{pid}/task/{tid}/stack") or "").splitlines()]
    return [pid, comm, f[0], int(f[11]), int(f[12]), read(f"/proc/{pid}/task/{tid}/wchan") or "",
            sysc[0] if sysc else "?", int(sched[0]), int(sched[1]), int(sched[2]), int(f[36]), "<".join(stack[:8])]


class QdiscWatch(threading.Thread):
    """tc -s qdisc of every link end every PERIOD s, in its own thread: tc
    enters the namespaces, and if that blocks, the samples go on."""

    def __init__(self, nss, period):
        super().__init__(daemon=True)
        self.nss, self.period, self.latest, self.took = nss, period, {}, 0.0

    def run(self):
        while True:
            t0 = time.time()
            got = {}
            for ns in self.nss:
                out = subprocess.run(["tc", "-n", ns, "-s", "-j", "qdisc"], capture_output=True,
                                     text=True).stdout
                try:
                    for q in json.loads(out or "[]"):
                        got[f"{ns}/{q['dev']}/{q['kind']}"] = [q.get("drops", 0), q.get("overlimits", 0),
                                                              q.get("backlog", 0)]
                except ValueError:
                    pass
            self.latest, self.took = got, time.time() - t0
            time.sleep(self.period)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--interval", type=float, default=0.05)
    ap.add_argument("--duration", type=float, default=1800)
    a = ap.parse_args()
    nss = namespaces(a.prefix)
    nodes = {n: ino for n, ino in nss.items() if not n.endswith("sw")}
    if not nodes:
        sys.exit(f"stall_sample.py: no namespace with prefix {a.prefix}")
    qdisc = QdiscWatch(list(nss), 1.0)
    qdisc.start()
    pids, last_refresh, last_all, seen_any, last = {}, 0.0, 0.0, False, time.time()
    t_end = time.time() + a.duration
    with open(a.out, "w") as out:
        while time.time() < t_end:
            now = time.time()
            if now - last_refresh >= 0.5:
                pids = pids_by_namespace(nodes)
                last_refresh = now
                if any(pids.values()):
                    seen_any = True
                elif seen_any:
                    break
            rec = {"t": round(now, 4), "late": round(now - last - a.interval, 4), "tasks": {}, "net": {}}
            last = now
            for ns, plist in pids.items():
                for pid in plist:
                    try:
                        tids = os.listdir(f"/proc/{pid}/task")
                    except OSError:
                        continue
                    for tid in tids:
                        s = task_sample(pid, tid)
                        if s:
                            rec["tasks"][tid] = [ns] + s
                for pid in plist:
                    c = tcp_counters(pid)
                    if c is not None:
                        rec["net"][ns] = c
                        break
            cpu = read("/proc/stat").splitlines()
            rec["cpu"] = [int(x) for x in cpu[0].split()[1:8]]
            rec["procs_running"] = int(next(l for l in cpu if l.startswith("procs_running")).split()[1])
            rec["qdisc"], rec["tc_s"] = qdisc.latest, round(qdisc.took, 3)
            if now - last_all >= 0.5:
                rec["all"] = all_processes()
                last_all = now
            rec["took"] = round(time.time() - now, 4)
            out.write(json.dumps(rec, separators=(",", ":")) + "\n")
            out.flush()
            time.sleep(max(0.0, a.interval - (time.time() - now)))


if __name__ == "__main__":
    main()
