"""score_distribution.png for ./grade-class: per task, how many students earned full, partial and
no points, and the distribution of totals. Run by class_grading.py with an interpreter that has
matplotlib:  class_figure.py GRADEBOOK.csv '{"01.1": 5, ...}' OUT.png"""
import csv
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(gradebook: str, maxima_json: str, output: str) -> None:
    maxima = json.loads(maxima_json)
    with open(gradebook, newline="") as f:
        rows = list(csv.DictReader(f))
    graded = [r for r in rows if r["status"] == "graded"]
    shown = graded or rows
    tasks = [t for t in maxima if t in (rows[0] if rows else {})]
    full = [sum(1 for r in shown if float(r[t]) >= maxima[t]) for t in tasks]
    zero = [sum(1 for r in shown if float(r[t]) == 0) for t in tasks]
    partial = [len(shown) - f - z for f, z in zip(full, zero)]

    fig, (bars, hist) = plt.subplots(1, 2, figsize=(11, 0.45 * len(tasks) + 3),
                                     gridspec_kw={"width_ratios": [3, 2]})
    y = list(range(len(tasks)))[::-1]
    bars.barh(y, full, color="#2b8a3e", label="full marks")
    bars.barh(y, partial, left=full, color="#f59f00", label="some points")
    bars.barh(y, zero, left=[f + p for f, p in zip(full, partial)], color="#c92a2a", label="no points")
    bars.set_yticks(y)
    bars.set_yticklabels([f"task {t}" for t in tasks])
    bars.set_xlabel("students")
    bars.set_xlim(0, max(len(shown), 1))
    bars.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize="small", frameon=False)
    bars.set_title("Points per task")

    totals = [float(r["total"]) for r in shown]
    top = float(rows[0]["max"]) if rows else 1.0
    high = max([top] + totals)
    step = max(1.0, round(high / 14))
    edges = [i * step for i in range(int(high // step) + 2)]
    hist.hist(totals, bins=edges, color="#1c7ed6", edgecolor="white")
    hist.set_xlabel(f"total points (of {top:g}; optional tasks add on top)")
    hist.set_ylabel("students")
    hist.set_title("Totals")
    note = f"{len(graded)} of {len(rows)} submissions graded on a GPU" if graded else \
        f"no submission graded on a GPU: {len(rows)} shown with the points they have"
    fig.suptitle(f"Score distribution ({note})")
    fig.tight_layout()
    fig.savefig(output, dpi=120)


if __name__ == "__main__":
    main(*sys.argv[1:4])
