"""Who else is on the GPU, as nvidia-smi sees it. The GPU lock (gpu_lock.py) keeps gradings
and sweeps from timing side by side, but not other programs: another user's training job
slows a timed kernel just as much. So the processes on the GPU just before and just after a
timed phase are reported beside its figures.

Best effort: without nvidia-smi, or when it fails, nothing is known and nothing is said. In a
container nvidia-smi often lists no processes at all (or process ids of another pid
namespace), so an empty list does not prove the GPU was free."""
from __future__ import annotations

import shutil
import subprocess
from typing import Iterable, List, Optional, Tuple

QUERY_TIMEOUT_S = 10

Process = Tuple[int, str]  # (pid, process name)


def compute_apps(uuid: Optional[str]) -> Optional[List[Process]]:
    """The processes with a CUDA context on the GPU `uuid`; None when that is unknown."""
    if not uuid or shutil.which("nvidia-smi") is None:
        return None
    try:
        result = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory",
                                 "--format=csv,noheader,nounits", f"--id={uuid}"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=QUERY_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    processes = []
    for line in result.stdout.decode(errors="replace").splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 3:
            continue
        try:
            pid = int(fields[0])
        except ValueError:
            continue  # "No running processes found" and the like
        processes.append((pid, ",".join(fields[1:-1])))  # a name with a comma in it stays whole
    return processes


def others(snapshots: Iterable[Optional[List[Process]]], ours: Iterable[int]) -> List[Process]:
    """The processes in any of the snapshots, each once, except `ours` (this driver and the
    grader programs it ran)."""
    ours = set(ours)
    seen = {}
    for snapshot in snapshots:
        for pid, name in snapshot or []:
            if pid not in ours:
                seen.setdefault(pid, name)
    return list(seen.items())
