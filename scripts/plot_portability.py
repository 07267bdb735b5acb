#!/usr/bin/python3
"""Cascade plots of a `zerotrain report --portability` table (Sewall, Pennycook,
Jacobsen, Deakin and McIntosh-Smith 2020, "Interpreting and visualizing
performance portability metrics"): OUT/portability_cascade_application.png
and, when any system has a peak, OUT/portability_cascade_architectural.png.

For each configuration the systems of H are ordered by decreasing efficiency
(those where it did not run last). Top panel: the efficiency on the k-th
system. Bottom panel: PP over the first k systems, |H_k| / sum(1/e_i), which
falls to 0 at the first system where the configuration did not run (the line
stops there).

    /usr/bin/python3 scripts/plot_portability.py REPORT_PORTABILITY_CSV OUT_DIR

zerotrain report --portability calls this itself when matplotlib is importable.
"""
import sys

import report_csv

KINDS = [  # efficiency column, whether a system belongs to H, title word
    ("application_efficiency", lambda row: True, "application"),
    ("architectural_efficiency", lambda row: row["in_architectural_h"] == "true", "architectural"),
]
NEEDED = ["configuration", "system", "ran", "application_efficiency",
          "architectural_efficiency", "in_architectural_h"]


def fail(message):
    report_csv.fail("plot_portability.py", message)


def read_rows(path):
    return report_csv.read_rows("plot_portability.py", path, NEEDED, "report_portability.csv")


def cascade(efficiencies):
    """Efficiencies (None: did not run) sorted decreasing, and PP over each prefix."""
    ordered = sorted(efficiencies, key=lambda e: -1 if e is None else -e)
    pps, inverse_sum = [], 0.0
    for k, e in enumerate(ordered, start=1):
        if e is None or e <= 0:
            break
        inverse_sum += 1.0 / e
        pps.append(k / inverse_sum)
    return ordered, pps


def cascade_figure(plt, rows, column, in_h, kind):
    systems = []
    for r in rows:
        if in_h(r) and r["system"] not in systems:
            systems.append(r["system"])
    configs = []
    for r in rows:
        if r["configuration"] not in configs:
            configs.append(r["configuration"])
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    x = list(range(1, len(systems) + 1))
    for config in configs:
        effs = [float(r[column]) if r["ran"] == "true" else None
                for r in rows if r["configuration"] == config and in_h(r)]
        ordered, pps = cascade(effs)
        ran = [e for e in ordered if e is not None]
        line, = top.plot(x[:len(ran)], ran, marker="o", label=config)
        bottom.plot(x[:len(pps)], pps, marker="o", color=line.get_color())
        if len(pps) < len(systems):  # did not run somewhere: PP is 0 from there on
            bottom.plot([len(pps) + 1], [0], marker="x", color=line.get_color())
    top.set_ylabel(f"{kind} efficiency")
    top.set_title(f"Cascade: {kind} efficiency, systems ordered by decreasing efficiency "
                  f"per configuration (|H| = {len(systems)})", fontsize=9)
    bottom.set_ylabel("PP over the first k systems")
    bottom.set_xlabel("k: systems so far, in each configuration's own order "
                      "(x: did not run, PP = 0)")
    bottom.set_xticks(x)
    for ax in (top, bottom):
        ax.set_ylim(0, 1.05 * max([1.0] + [float(r[column]) for r in rows
                                            if r[column] and in_h(r)]))
        ax.grid(alpha=0.3)
    top.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        fail(f"matplotlib is not importable ({e})")
    rows = read_rows(argv[1])
    try:
        for column, in_h, kind in KINDS:
            if not any(in_h(r) for r in rows):
                continue
            fig = cascade_figure(plt, rows, column, in_h, kind)
            fig.tight_layout()
            fig.savefig(f"{argv[2]}/portability_cascade_{kind}.png", dpi=110,
                        bbox_inches="tight")
            plt.close(fig)
    except ValueError as e:
        fail(f"{argv[1]}: a number did not parse ({e})")
    except OSError as e:
        fail(f"{argv[2]}: cannot write a plot: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
