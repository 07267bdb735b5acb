#!/usr/bin/python3
"""Plots of a `zerotrain report` table: OUT/throughput.png (tokens per second
per configuration), OUT/bytes_per_primitive.png (bus bytes per rank per
step, stacked by primitive: the gradient all-reduce, reduce and
reduce-scatter, and the parameter all-gather) and, when the report has the
step-time model's predictions, OUT/predicted_vs_measured.png (predicted
against measured step time, one point per run, on the diagonal when equal).
The throughput bars and the predicted points are coloured by ZeRO stage, with
a key of the stages present; each bar's note is the speed-up (tokens/s), the
CSV's speedup_vs_ds_default.

    /usr/bin/python3 scripts/plot_report.py REPORT_CSV OUT_DIR

One horizontal bar per run, in the CSV's order (stage, path, settings), so the
two plots line up row for row with report.md. zerotrain report calls this
itself when matplotlib is importable.
"""
import sys

import report_csv

STAGE_COLORS = ["#7f7f7f", "#1f77b4", "#2ca02c", "#d62728"]
PRIMITIVES = [
    ("grad_all_reduce_bus_bytes", "gradient all_reduce", "#d62728"),
    ("grad_reduce_bus_bytes", "gradient reduce", "#ff7f0e"),
    ("grad_reduce_scatter_bus_bytes", "gradient reduce_scatter", "#2ca02c"),
    ("param_all_gather_bus_bytes", "parameter all_gather", "#1f77b4"),
]
NEEDED = ["run", "stage", "grad_path", "tokens_per_second", "speedup_vs_ds_default"] + [
    column for column, _, _ in PRIMITIVES
]


def fail(message):
    report_csv.fail("plot_report.py", message)


def read_rows(path):
    return report_csv.read_rows("plot_report.py", path, NEEDED, "report.csv")


def unit_for(max_bytes):
    for scale, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if max_bytes >= scale:
            return scale, name
    return 1.0, "B"


def stage_color(row):
    return STAGE_COLORS[int(row["stage"]) % len(STAGE_COLORS)]


def stage_patches(rows):
    """The colour key: one patch per ZeRO stage present, in stage order."""
    from matplotlib.patches import Patch

    row_of_stage = {int(r["stage"]): r for r in rows}
    return [Patch(color=stage_color(r), label=f"ZeRO stage {s}")
            for s, r in sorted(row_of_stage.items())]


def bar_figure(plt, n_rows):
    height = max(2.5, 0.32 * n_rows + 1.3)
    fig, ax = plt.subplots(figsize=(10, height))
    ax.invert_yaxis()  # first CSV row on top, as in report.md
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return fig, ax


def throughput_figure(plt, rows):
    fig, ax = bar_figure(plt, len(rows))
    labels = [r["run"] for r in rows]
    values = [float(r["tokens_per_second"]) for r in rows]
    ax.barh(range(len(rows)), values, color=[stage_color(r) for r in rows])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=8)
    for i, r in enumerate(rows):
        note = f"{values[i]:,.0f}"
        if r["speedup_vs_ds_default"]:
            note += f"  ({float(r['speedup_vs_ds_default']):.2f}x DS default, tokens/s)"
        ax.text(values[i], i, " " + note, va="center", fontsize=7)
    ax.set_xlim(0, max(values) * 1.5 if max(values) > 0 else 1)
    ax.set_xlabel("tokens per second (global batch, first step excluded); "
                  "in brackets: speed-up (tokens/s) vs DS default")
    ax.set_title("Throughput per configuration (bar colour: ZeRO stage)")
    ax.legend(handles=stage_patches(rows), fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))
    return fig


def bytes_figure(plt, rows):
    fig, ax = bar_figure(plt, len(rows))
    series = [[float(r[column]) for r in rows] for column, _, _ in PRIMITIVES]
    totals = [sum(values) for values in zip(*series)]
    scale, unit = unit_for(max(totals))
    left = [0.0] * len(rows)
    for (column, label, color), values in zip(PRIMITIVES, series):
        scaled = [v / scale for v in values]
        ax.barh(range(len(rows)), scaled, left=left, color=color, label=label)
        left = [a + b for a, b in zip(left, scaled)]
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{r['run']} [{r['grad_path']}]" for r in rows], fontsize=8)
    ax.set_xlabel(f"bus bytes per rank per optimizer step ({unit}; norm all-reduce excluded)")
    ax.set_title("Communication volume per primitive")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def predicted_figure(plt, rows):
    points = [r for r in rows if r.get("predicted_step_ms")]
    measured = [float(r["step_ms"]) for r in points]
    predicted = [float(r["predicted_step_ms"]) for r in points]
    fig, ax = plt.subplots(figsize=(7, 6))
    top = max(measured + predicted) * 1.1
    diagonal = ax.plot([0, top], [0, top], color="#7f7f7f", lw=1, label="predicted = measured")
    band = ax.fill_between([0, top], [0, top * 0.85], [0, top * 1.15], color="#7f7f7f",
                           alpha=0.12, label="within 15%")
    for r, m, p in zip(points, measured, predicted):
        ax.scatter([m], [p], color=stage_color(r), s=24)
        ax.annotate(r["run"], (m, p), fontsize=6, xytext=(3, 2), textcoords="offset points")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("measured step ms (median)")
    ax.set_ylabel("predicted step ms (the step-time model)")
    ax.set_title("Step time: the model against the runs (colour: ZeRO stage)")
    ax.legend(handles=diagonal + [band] + stage_patches(points), fontsize=8, loc="upper left")
    return fig


# The *_figure functions return the figure rather than save it, so that
# tests/e2e/sweep_e2e.sh can read its keys and notes back.
def save(plt, fig, out_path, note):
    if note:
        fig.text(0.0, -0.02, note, fontsize=8, color="firebrick", va="top")
    fig.tight_layout()
    fig.savefig(out_path, dpi=120, bbox_inches="tight")
    plt.close(fig)


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
    emulated = [r for r in rows if "compute emulated" in r["device"]]
    note = (f"COMPUTE EMULATED in {len(emulated)} of {len(rows)} runs: timed waits replaced "
            "the model's arithmetic; the collectives are real" if emulated else "")
    try:
        save(plt, throughput_figure(plt, rows), f"{argv[2]}/throughput.png", note)
        save(plt, bytes_figure(plt, rows), f"{argv[2]}/bytes_per_primitive.png", note)
        if any(r.get("predicted_step_ms") for r in rows):
            save(plt, predicted_figure(plt, rows), f"{argv[2]}/predicted_vs_measured.png", note)
    except ValueError as e:
        fail(f"{argv[1]}: a number did not parse ({e})")
    except OSError as e:
        fail(f"{argv[2]}: cannot write a plot: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
