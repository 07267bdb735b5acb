"""The table of scripts/grid_rank_order.sh: per system and case, the median
step over the sittings' step medians (ms, measured), the spread of the
sittings, and rank 0's bytes per step by dimension (tensor or pipeline, and
data; bus bytes and their inter-node part, counted by the run), with the
step relative to data parallelism alone on the same system; for a pipeline
also the bubble by formula and stage 0's measured wait in receives over its
step. Given zerotrain's binary, each case's step predicted by `zerotrain
report` (the grid step-time model for grids, the data-parallel one for t1;
model output, from the emulated compute or one reference run's, and the
system's commbench curves or the cluster's link) beside the measured one."""
import csv
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile


def real_compute(case_dir):
    """Whether the case's sittings computed for real (not compute-emulated)."""
    for path in glob.glob(os.path.join(case_dir, "sitting*", "summary.json")):
        return json.load(open(path)).get("compute_mode", "real") != "emulated"
    return False


def curve_files(system):
    """The commbench files scripts/grid_rank_order.sh measured on a system,
    by kind: whole world, tensor groups, data-parallel groups."""
    return {"whole": sorted(glob.glob(os.path.join(system, "commbench.json"))),
            "tensor": sorted(glob.glob(os.path.join(system, "tensor-curves-t*.json"))),
            "data": sorted(glob.glob(os.path.join(system, "data-curves-d*-s*.json")))}


def predicted_ms(zt, case_dir):
    """The step `zerotrain report` predicts for the case's sittings (one
    config, one prediction), or None where it predicts none: data
    parallelism alone (t1) from the system's whole-world commbench curves,
    a grid's tensor and data-parallel calls from the curves measured over
    its groups, where the system has them. Real compute comes from one
    reference per system, the whole model's as t1's first sitting measured
    it (report --compute-from); emulated compute is the stated one."""
    system = os.path.dirname(case_dir)
    curves = []
    reference = os.path.join(system, "t1", "sitting1", "summary.json")
    if real_compute(case_dir) and os.path.exists(reference):
        curves = ["--compute-from", reference]
    files = curve_files(system)
    if os.path.basename(case_dir) == "t1":
        for path in files["whole"]:
            curves += ["--network", path]
    else:
        for option, kind in (("--tensor-curves", "tensor"), ("--data-curves", "data")):
            for path in files[kind]:
                curves += [option, path]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([zt, "report", case_dir, "--out", tmp, "--no-plots"] + curves, check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(tmp, "report.csv")) as f:
            got = [float(r["predicted_step_ms"]) for r in csv.DictReader(f) if r["predicted_step_ms"]]
    return statistics.median(got) if got else None


def main(out, link, study, zt):
    other = "tensor" if study == "tensor" else "pipeline"
    rows, emulated, real = [], set(), False
    for system in sorted(os.listdir(out)):
        base = None
        cases = sorted(os.listdir(os.path.join(out, system)), key=lambda c: (c != "t1", c))
        for case in cases:
            if not os.path.isdir(os.path.join(out, system, case)):
                continue
            sums = [json.load(open(p)) for p in
                    sorted(glob.glob(os.path.join(out, system, case, "sitting*", "summary.json")))]
            if not sums:
                continue
            steps = [s["step_ms_median"] for s in sums]
            for s in sums:
                if s.get("compute_mode") == "emulated":
                    emulated.add(s["emulated_compute"]["micro_step_ms"])
                else:
                    real = True
            dims = sums[0]["comm"]["per_step_by_dimension"]

            def total(dim, key):
                return sum(v[key] for v in dims[dim].values()) / 1e6

            median = statistics.median(steps)
            if case == "t1":
                base = median
            pipe = sums[0].get("pipeline")
            bubble = (f"{pipe['bubble_formula']:.3f} / "
                      f"{statistics.median(s['pipeline']['recv_wait_fraction_by_stage'][0] for s in sums):.3f}"
                      if pipe else "-")
            predicted = predicted_ms(zt, os.path.join(out, system, case)) if zt else None
            rows.append((system, case, median, min(steps), max(steps), len(steps),
                         total(other, "bus_bytes"), total(other, "inter_node_bus_bytes"),
                         total("data", "bus_bytes"), total("data", "inter_node_bus_bytes"),
                         median / base if base else float("nan"), bubble,
                         f"{predicted:.1f} ({predicted / median:.2f})" if predicted else "-"))
    if emulated:
        print("Compute emulated: " + ", ".join(f"{ms:g}" for ms in sorted(emulated)) +
              " ms per whole-model micro-step (each pipeline stage waits its parameter share)")
    print(f"Measured on emulated clusters, {link} between nodes, shared memory inside "
          "(scripts/grid_rank_order.sh); step = median over sittings of each sitting's median "
          "step; rank 0's bytes per step as the runs counted them (MB)\n")
    if zt:
        print("Predicted (model output, `zerotrain report`): the grid step-time model "
              "(zero/analysis/grid_step_time.h) for grids, its tensor calls from the system's "
              "`commbench --group-size T` curves (tensor-curves-tT.json) and its data-parallel "
              "calls from `commbench --group-size D --group-stride T` (data-curves-dD-sT.json); "
              "the data-parallel step-time model for t1, from whole-world commbench curves "
              "(commbench.json); " + ("compute from each system's t1/sitting1 (real compute, "
              "the whole model's micro-step); " if real else "") +
              "in brackets predicted / measured; - where it predicts none\n")
        for system in sorted(os.listdir(out)):
            if os.path.isdir(os.path.join(out, system)):
                names = [os.path.basename(p) for k in curve_files(os.path.join(out, system)).values()
                         for p in k]
                print(f"Curves of {system}: " + (", ".join(names) if names else
                      "none (every call by the cluster's link figures)"))
        print()
    extra = " | bubble formula / stage 0 wait" if study == "pipeline" else ""
    print(f"| system | case | step ms | sittings (min-max) | predicted ms | {other} bus MB "
          f"| of it inter-node | data bus MB | of it inter-node | step / t1{extra} |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---:" +
          (" | ---: |" if study == "pipeline" else " |"))
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[5]} ({r[3]:.1f}-{r[4]:.1f}) | {r[12]} | "
              f"{r[6]:.2f} | {r[7]:.2f} | {r[8]:.2f} | {r[9]:.2f} | {r[10]:.2f}x |" +
              (f" {r[11]} |" if study == "pipeline" else ""))


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5) or sys.argv[3] not in ("tensor", "pipeline"):
        sys.exit("usage: grid_rank_order_table.py OUT_DIR LINK tensor|pipeline [ZEROTRAIN]")
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None)
