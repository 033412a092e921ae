"""Reads lessons/manifest.json, the one list of lessons, tasks, points and thresholds."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import List, Optional


class ManifestError(Exception):
    """The manifest is malformed, or a lesson asked for does not exist."""


# The compute-sanitizer tools a lesson or task may name ("sanitizers"), run in the order given.
# memcheck: out-of-bounds and misaligned accesses, and (with the flag the driver adds) accesses to
# stream-ordered memory before its allocation or after its free; racecheck: shared-memory hazards;
# synccheck: barriers and warp primitives misused; initcheck: reads of global memory never written.
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")

# What a lesson's sweep draws ("sweep": {"kind": ..., "figures": [...]}): ./plot draws the figures
# named, in that order, with the drawing code of the kind (tools/bench/plot.py), and never guesses
# from a CSV's rows; ./sweep sums a CSV up the kind's way. Each kind's figures, as ./plot names
# them (its module documentation describes each one):
SWEEP_FIGURES = {
    "bandwidth": ("time_vs_n", "bandwidth_vs_block", "student_vs_reference", "kernel_vs_transfer"),
    "gflops": ("gflops_vs_n", "fraction_of_cublas"),
    "reduction": ("time_vs_n", "gbps_vs_n", "fraction_of_cub"),
    "streams": ("time_vs_chunks", "timeline"),
    "grid": ("gbps_vs_n", "fraction_of_copy"),
    "monte_carlo": ("pi_error_vs_n", "pi_rate_vs_n", "histogram_vs_bins"),
}


@dataclass(frozen=True)
class Sweep:
    """A lesson's sweep (./sweep NN, tools/bench/NN_slug.cu) and the figures ./plot draws from it."""
    kind: str
    figures: tuple


@dataclass(frozen=True)
class ScaledThreshold:
    """A threshold that follows the GPU: `factor` times a figure the grader program measures on
    the same GPU in the same run and reports beside the task's metric, in the same units (the
    metric named `of`). The manifest declares it as "threshold": {"factor": 1.15, "of": "..."};
    scoring.effective_threshold computes it."""
    factor: float
    of: str


@dataclass
class Task:
    id: int
    title: str
    correctness_points: float
    performance_points: float = 0.0
    perf_metric: Optional[str] = None
    perf_threshold: Optional[float] = None  # a fixed threshold; None when it is scaled (perf_scaled)
    hints: List[str] = field(default_factory=list)
    optional: bool = False  # a challenge: its points are a bonus on top of the lesson's total
    # Its correctness tests compare timings (lesson 02's event timer with the helper's), so they
    # run alone on the GPU like a performance phase, not side by side with other gradings.
    correctness_timed: bool = False
    perf_scaled: Optional[ScaledThreshold] = None  # a threshold measured on the GPU at hand
    # "counters": "always" in its "performance": the verdict shows Nsight Compute's counters of the
    # timed call whether it passed or not (lesson 06: they are what tells its transposes apart);
    # otherwise only a task that fell short is profiled (counters.py).
    counters_always: bool = False
    # The compute-sanitizer tools its correctness tests run under (./grade --sanitize, and the check
    # of a pass): the task's own "sanitizers" in the manifest, else its lesson's.
    sanitizers: List[str] = field(default_factory=lambda: ["memcheck"])

    @property
    def tag(self) -> str:
        return f"task_{self.id}"

    @property
    def max_points(self) -> float:
        return self.correctness_points + self.performance_points


@dataclass
class Lesson:
    slug: str
    title: str
    sources: List[str]
    tasks: List[Task]
    timeout_s: float = 60.0
    sanitizers: List[str] = field(default_factory=lambda: ["memcheck"])  # its tasks' tools, unless a task names its own
    sweep: Optional[Sweep] = None  # None: the lesson has no sweep
    # Its correctness tests look at how work on several streams ran together (lesson 05: the
    # tracer's timestamps of copies, kernels and the caller's kernel): its processes that time
    # nothing keep CUDA's own work queues (runner.UNTIMED_SETTINGS is not given to them).
    streams_side_by_side: bool = False

    @property
    def number(self) -> int:
        return int(self.slug.split("_", 1)[0])

    @property
    def name(self) -> str:
        return self.slug.split("_", 1)[1]

    @property
    def max_points(self) -> float:
        """The points of the required tasks; optional ones add bonus_points on top."""
        return sum(t.max_points for t in self.tasks if not t.optional)

    @property
    def bonus_points(self) -> float:
        return sum(t.max_points for t in self.tasks if t.optional)


_SLUG = re.compile(r"^\d{2}_[a-z0-9_]+$")


def _scaled_threshold(raw: dict, where: str) -> ScaledThreshold:
    """{"factor": 1.15, "of": "metric"}, validated."""
    if set(raw) != {"factor", "of"}:
        raise ManifestError(f"{where}: a scaled threshold is {{\"factor\": number, \"of\": \"metric\"}}, "
                            f"got the keys {sorted(raw)}")
    factor, of = raw["factor"], raw["of"]
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 0:
        raise ManifestError(f"{where}: the factor of a scaled threshold must be a positive number, got {factor!r}")
    if not isinstance(of, str) or not of:
        raise ManifestError(f"{where}: a scaled threshold names the measured metric it scales (\"of\")")
    return ScaledThreshold(float(factor), of)


def _sanitizers(raw, where: str) -> List[str]:
    """A "sanitizers" list, validated: compute-sanitizer tools by name, each once, at least one."""
    if (not isinstance(raw, list) or not raw or not all(isinstance(t, str) for t in raw)
            or len(set(raw)) != len(raw)):
        raise ManifestError(f"{where}: \"sanitizers\" is a list of compute-sanitizer tools, each named once, "
                            f"got {raw!r}")
    unknown = [t for t in raw if t not in SANITIZER_TOOLS]
    if unknown:
        raise ManifestError(f"{where}: unknown compute-sanitizer tool(s) {', '.join(unknown)}; the tools are "
                            + ", ".join(SANITIZER_TOOLS))
    return list(raw)


def _sweep(raw, where: str) -> Sweep:
    """A "sweep" object, validated: {"kind": one of SWEEP_FIGURES, "figures": [names of that kind's figures]}."""
    if not isinstance(raw, dict) or set(raw) != {"kind", "figures"}:
        raise ManifestError(f"{where}: \"sweep\" is {{\"kind\": ..., \"figures\": [...]}}, got {raw!r}")
    kind, figures = raw["kind"], raw["figures"]
    if not isinstance(kind, str) or kind not in SWEEP_FIGURES:
        raise ManifestError(f"{where}: unknown sweep kind {kind!r}; the kinds are " + ", ".join(SWEEP_FIGURES))
    if (not isinstance(figures, list) or not figures or not all(isinstance(f, str) for f in figures)
            or len(set(figures)) != len(figures)):
        raise ManifestError(f"{where}: a sweep's \"figures\" is a list of figure names, each once, got {figures!r}")
    unknown = [f for f in figures if f not in SWEEP_FIGURES[kind]]
    if unknown:
        raise ManifestError(f"{where}: ./plot draws no figure {', '.join(map(repr, unknown))} for a {kind!r} sweep; "
                            f"it draws " + ", ".join(SWEEP_FIGURES[kind]))
    return Sweep(kind, tuple(figures))


def _task(raw: dict, slug: str, lesson_sanitizers: List[str]) -> Task:
    try:
        points = raw["points"]
        perf = raw.get("performance") or {}
        threshold = perf.get("threshold")
        task = Task(
            id=int(raw["id"]),
            title=str(raw["title"]),
            correctness_points=float(points["correctness"]),
            performance_points=float(points.get("performance", 0)),
            perf_metric=perf.get("metric"),
            perf_threshold=float(threshold) if threshold is not None and not isinstance(threshold, dict) else None,
            hints=[str(h) for h in raw.get("hints", [])],
            optional=bool(raw.get("optional", False)),
            correctness_timed=bool(raw.get("correctness_timed", False)),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ManifestError(f"lesson {slug}: a task is missing or has a bad field: {e}") from e
    counters = perf.get("counters", "when short")
    if counters not in ("always", "when short"):
        raise ManifestError(f"lesson {slug} task {task.id}: \"counters\" is \"always\" or \"when short\" "
                            f"(the default), got {counters!r}")
    task.counters_always = counters == "always"
    if isinstance(threshold, dict):
        task.perf_scaled = _scaled_threshold(threshold, f"lesson {slug} task {task.id}")
    task.sanitizers = (_sanitizers(raw["sanitizers"], f"lesson {slug} task {task.id}") if "sanitizers" in raw
                       else list(lesson_sanitizers))
    if task.performance_points and (task.perf_metric is None or
                                    (task.perf_threshold is None and task.perf_scaled is None)):
        raise ManifestError(f"lesson {slug} task {task.id}: performance points need a metric and a threshold")
    return task


def parse_manifest(data: dict) -> List[Lesson]:
    """Lessons from the manifest's JSON object, validated, in manifest order."""
    lessons = []
    for raw in data.get("lessons", []):
        slug = raw.get("slug", "")
        if not _SLUG.match(slug):
            raise ManifestError(f"lesson slug {slug!r} must look like 01_vector_add (two digits, underscore, name)")
        sanitizers = _sanitizers(raw.get("sanitizers", ["memcheck"]), f"lesson {slug}")
        side_by_side = raw.get("streams_side_by_side", False)
        if not isinstance(side_by_side, bool):
            raise ManifestError(f"lesson {slug}: \"streams_side_by_side\" is true or false, got {side_by_side!r}")
        tasks = [_task(t, slug, sanitizers) for t in raw.get("tasks", [])]
        if [t.id for t in tasks] != list(range(1, len(tasks) + 1)):
            raise ManifestError(f"lesson {slug}: tasks must be numbered 1, 2, 3, ... in order")
        lessons.append(Lesson(slug=slug, title=str(raw.get("title", slug)), sources=list(raw.get("sources", [])),
                              tasks=tasks, timeout_s=float(raw.get("timeout_s", 60)),
                              sanitizers=sanitizers, streams_side_by_side=side_by_side,
                              sweep=_sweep(raw["sweep"], f"lesson {slug}") if "sweep" in raw else None))
    slugs = [l.slug for l in lessons]
    if slugs != sorted(slugs) or len(set(slugs)) != len(slugs):
        raise ManifestError("lessons must be listed once each, in slug order")
    return lessons


def load_manifest(path: Path) -> List[Lesson]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ManifestError(f"cannot read the lesson manifest {path}: {e}") from e
    return parse_manifest(data)


def select_lessons(lessons: List[Lesson], selectors: List[str]) -> List[Lesson]:
    """The lessons named by number ("1", "01"), slug ("01_vector_add") or name
    ("vector_add", "vector-add"); all of them when no selector is given. "03.2" names task 2
    of lesson 03 alone: the lesson comes back with that task only (several such selectors of
    one lesson add up)."""
    if not selectors:
        return list(lessons)
    chosen: List[Lesson] = []
    tasks_of = {}  # slug -> task ids asked for; None: the whole lesson
    for selector in selectors:
        key = selector.strip().lower().replace("-", "_").rstrip("/")
        key = key.split("/")[-1]
        task_id = None
        task_part = re.match(r"^(.+)\.(\d+)$", key)
        if task_part:
            key, task_id = task_part.group(1), int(task_part.group(2))
        match = [l for l in lessons
                 if key in (l.slug, l.name) or (key.isdigit() and int(key) == l.number)]
        if not match:
            known = ", ".join(l.slug for l in lessons)
            raise ManifestError(f"no lesson matches {selector!r}; the lessons are: {known}")
        for lesson in match:
            if task_id is not None and task_id not in [t.id for t in lesson.tasks]:
                raise ManifestError(f"lesson {lesson.slug} has no task {task_id}; its tasks are "
                                    + ", ".join(str(t.id) for t in lesson.tasks))
            if lesson not in chosen:
                chosen.append(lesson)
                tasks_of[lesson.slug] = set() if task_id is not None else None
            if task_id is None:
                tasks_of[lesson.slug] = None
            elif tasks_of[lesson.slug] is not None:
                tasks_of[lesson.slug].add(task_id)
    return [l if tasks_of[l.slug] is None else replace(l, tasks=[t for t in l.tasks if t.id in tasks_of[l.slug]])
            for l in chosen]
