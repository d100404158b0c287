"""The crash-convergence fault suite (``python -m python_jobs faults``).

Each scenario is a writer command run on a prepared warehouse home. A point kills the command with SIGKILL
(its whole process group: Python and the Spark JVM) at a seeded step and delay, runs the same command again
to the end, and compares every table (``warehouse fingerprint``: row count and an order-independent digest,
wall-clock columns left out) with the reference: the same command run once, uninterrupted, on the same home.

Throughput: a JVM start costs about 20 s, so the prefix state of every scenario is built once (one process
per step of the chain below), saved as a copy of the home (files and Derby), and restored by a file copy for
every point; the reference fingerprints and row hashes are computed once in the reference process. A point
costs two JVM starts: the killed run and the re-run, which fingerprints in its own JVM. The home is always
restored to the same path because the metastore records absolute table locations.

The chain: empty → ``ingest lineage`` of a batch with bad lines and duplicates (scenario ``ingest``) →
the generated sample → ``dbt build`` (``build-first``) → a second batch → ``dbt build``
(``build-incremental``) → ``warehouse compact --min-files 2`` (``compact``) → ``warehouse retain`` with a cut-off
inside the sample's history and its full rebuild (``retain``). More scenarios (the collector's
load) are added to ``STEPS`` with the state they start from.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from python_jobs.settings import PROJECT_DIR
from python_jobs.tools.faults.collector import (
    check_landing,
    compare_event_digests,
    landed_lines,
    prepare_landing,
    run_load,
)
from python_jobs.tools.generate.lineage import SyntheticSpec
from python_jobs.tools.generate.lineage import events as synthetic_events

SIZES = {"small": 40, "medium": 400, "large": 4000}  # synthetic events per batch
MAX_DELAY_MS = 1500
LOCK_TAKEOVER_NOTE = "took over the lock left by"
FAULT_CHILD = "python_jobs.tools.faults.child"  # run as a module in a process of its own (see Workspace.child)


@dataclass(frozen=True)
class Step:
    """One command of the chain: run on state ``before``, leaves state ``after``; a scenario when named."""

    before: str
    after: str
    argv: tuple[str, ...]
    scenario: str | None = None


# The main job's dbt var: the sample's own models (its CRM changelog, its registry tables) build too.
BUILD = ("dbt", "build", "--vars", json.dumps({"sample_inputs": True}))


# Inside the history of both batches and the sample (which start on 2026-01-01).
RETAIN_BEFORE = "2026-01-02T00:00:00Z"


def default_steps(batch_one: Path, batch_two: Path) -> list[Step]:
    return [
        Step("empty", "batch-one", ("ingest", "lineage", str(batch_one)), "ingest"),
        Step("batch-one", "samples", ("--prep-samples",)),
        Step("samples", "built", BUILD, "build-first"),
        Step("built", "batch-two", ("ingest", "lineage", str(batch_two))),
        Step("batch-two", "rebuilt", BUILD, "build-incremental"),
        Step("rebuilt", "compacted", ("warehouse", "compact", "--min-files", "2"), "compact"),
        Step("compacted", "retained", ("warehouse", "retain", "--before", RETAIN_BEFORE, "--vars", BUILD[-1]),
             "retain"),
    ]


SCENARIOS = ("ingest", "build-first", "build-incremental", "compact", "retain", "collector")
# The collector scenario is not a step of the chain: it loads its own events into an empty home.
COLLECTOR = "collector"
COLLECTOR_EVENTS = 400
COLLECTOR_MAX_DELAY_MS = 40  # the load takes about a second: a longer delay would kill it after the last 201


@dataclass(frozen=True)
class Point:
    scenario: str
    step: int
    delay_ms: int

    def label(self) -> str:
        return f"{self.scenario}:{self.step}:{self.delay_ms}"

    @staticmethod
    def parse(text: str) -> Point:
        scenario, step, delay = text.rsplit(":", 2)
        return Point(scenario, int(step), int(delay))


@dataclass
class PointResult:
    point: Point
    killed: bool
    rerun_ok: bool
    converged: bool
    takeover_message: bool
    seconds: float
    differences: dict[str, dict] = field(default_factory=dict)
    error: str = ""


# ----------------------------------------------------------------------------------------------- inputs


def batch_files(events: int, seed: int) -> dict[str, str]:
    """A batch of four files: two clean ones (a clean staged file is moved into the table whole), one with
    a bad line, and one of duplicates (of events in the other files) and bad lines (rewritten without them)."""
    spec = SyntheticSpec(events=events, jobs=max(2, events // 8), seed=seed, base_columns=6)
    lines = [json.dumps(event, sort_keys=True) for event in synthetic_events(spec)]
    third = -(-len(lines) // 3)
    truncated = '{"eventType": "START", "eventTime": "2026-01-01T00:00:00Z"'
    missing_fields = '{"eventType": "COMPLETE", "producer": "p"}'
    parts = [
        lines[:third],
        lines[third:2 * third],
        [*lines[2 * third:], "not json at all"],
        [truncated, *lines[::10], missing_fields],
    ]
    return {f"part-{index}.ndjson": "\n".join(part) + "\n" for index, part in enumerate(parts)}


def write_batch(folder: Path, events: int, seed: int) -> None:
    """Writes the batch unless it is there already: the files' times are part of the ingest batch id."""
    wanted = batch_files(events, seed)
    existing = {p.name: p.read_text() for p in folder.glob("*")} if folder.exists() else {}
    if existing != wanted:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name, text in wanted.items():
            (folder / name).write_text(text)


def source_digest(batches: Path) -> str:
    """What the prepared states depend on: the code, models, samples and the input batches."""
    digest = hashlib.sha256()
    for path in sorted(batches.rglob("*")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"")
    suite_code = Path(__file__).resolve().parent  # the suite's own code does not shape the warehouse
    for folder in ("python_jobs", "models", "macros", "seeds", "adapter", "samples"):
        for path in sorted((PROJECT_DIR / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and not path.is_relative_to(suite_code):
                digest.update(str(path.relative_to(PROJECT_DIR)).encode())
                digest.update(path.read_bytes())
    for name in ("dbt_project.yml", "profiles.yml"):
        digest.update((PROJECT_DIR / name).read_bytes())
    return digest.hexdigest()


# ------------------------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    def state(self, name: str) -> Path:
        return self.root / "states" / name

    def reference(self, scenario: str) -> Path:
        return self.root / "reference" / scenario

    def logs(self) -> Path:
        return self.root / "logs"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("LINEAGE_SHARED_WAREHOUSE", None)
        env.update(
            LINEAGE_HOME=str(self.home),
            LINEAGE_TARGET="local",
            LINEAGE_SCHEMA_PREFIX="",
            DBT_TARGET_PATH=str(self.root / "dbt-target"),
            DBT_LOG_PATH=str(self.root / "dbt-logs"),
            DBT_SEND_ANONYMOUS_USAGE_STATS="false",
            DBT_PROFILES_DIR=str(PROJECT_DIR),
        )
        env.setdefault("LINEAGE_LOCAL_MASTER", "local[2]")
        env.setdefault("LINEAGE_SHUFFLE_PARTITIONS", "4")
        env.setdefault("LINEAGE_DRIVER_MEMORY", "2g")
        return env

    def restore(self, state: str) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        if state == "empty":
            self.home.mkdir(parents=True)
        else:
            shutil.copytree(self.state(state), self.home, symlinks=True)

    def save(self, state: str) -> None:
        target = self.state(state)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(self.home, target, symlinks=True)

    def child(self, options: Sequence[str], argv: Sequence[str], log_name: str) -> subprocess.CompletedProcess[str]:
        """Runs the fault child in its own session, so that it can SIGKILL its own process group."""
        self.logs().mkdir(parents=True, exist_ok=True)
        command_argv = list(argv) if argv and argv[0] == "--prep-samples" else ["--", *argv]
        command = [sys.executable, "-m", FAULT_CHILD, *options, *command_argv]
        with open(self.logs() / f"{log_name}.out", "w") as out, open(self.logs() / f"{log_name}.err", "w") as err:
            proc = subprocess.run(command, cwd=PROJECT_DIR, env=self.env(), stdout=out, stderr=err,
                                  text=True, start_new_session=True, check=False)
        return proc


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""


# --------------------------------------------------------------------------------------------- prepare


def prepare(work: Workspace, steps: Sequence[Step], digest: str, log: Callable[[str], None]) -> dict[str, int]:
    """Runs the chain once (or reuses it): saves every state, and per scenario the reference fingerprint,
    row hashes and step count. Returns the step count per scenario."""
    manifest_path = work.root / "prepared.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("digest") == digest and all(
            work.state(s.after).exists() for s in steps
        ):
            log(f"reusing the prepared states and references in {work.root}")
            return {k: int(v) for k, v in manifest["steps"].items()}
    shutil.rmtree(work.root / "states", ignore_errors=True)
    shutil.rmtree(work.root / "reference", ignore_errors=True)
    counts: dict[str, int] = {}
    for step in steps:
        started = time.monotonic()
        work.restore(step.before)
        options: list[str] = []
        if step.scenario:
            ref = work.reference(step.scenario)
            ref.mkdir(parents=True, exist_ok=True)
            options = ["--steps-out", str(ref / "steps"), "--trace-out", str(ref / "trace.txt"),
                       "--fingerprint-out", str(ref / "fingerprint.json"), "--rows-out", str(ref / "rows")]
        name = f"prepare-{step.after}"
        proc = work.child(options, step.argv, name)
        if proc.returncode != 0:
            raise RuntimeError(f"preparing {step.after} ({' '.join(step.argv)}) failed with {proc.returncode}:\n"
                               f"{_tail(work.logs() / f'{name}.err', 30)}")
        work.save(step.after)
        if step.scenario:
            counts[step.scenario] = int((work.reference(step.scenario) / "steps").read_text())
            log(f"prepared {step.after}: reference `{' '.join(step.argv)}` has {counts[step.scenario]} steps "
                f"({time.monotonic() - started:.0f}s)")
        else:
            log(f"prepared {step.after} ({time.monotonic() - started:.0f}s)")
    manifest_path.write_text(json.dumps({"digest": digest, "steps": counts}))
    return counts


# ------------------------------------------------------------------------------------------------ points


def plan_points(scenarios: Sequence[str], step_counts: dict[str, int], points: int, seed: int) -> list[Point]:
    """Round-robin over the scenarios; a uniform step; no delay (kill before the call) or a uniform delay."""
    rng = random.Random(seed)
    planned = []
    for index in range(points):
        scenario = scenarios[index % len(scenarios)]
        step = rng.randint(1, step_counts[scenario])
        max_delay = COLLECTOR_MAX_DELAY_MS if scenario == COLLECTOR else MAX_DELAY_MS
        delay = 0 if rng.random() < 0.3 else rng.randint(1, max_delay)
        planned.append(Point(scenario, step, delay))
    return planned


def run_point(work: Workspace, step: Step, point: Point) -> PointResult:
    started = time.monotonic()
    work.restore(step.before)
    label = point.label().replace(":", "_")
    killed_run = work.child(["--kill-at", str(point.step), "--delay-ms", str(point.delay_ms)], step.argv,
                            f"{label}-killed")
    killed = killed_run.returncode == -signal.SIGKILL
    ref = work.reference(point.scenario)
    out = work.root / "points" / label
    out.mkdir(parents=True, exist_ok=True)
    rerun = work.child(
        ["--fingerprint-out", str(out / "fingerprint.json"), "--reference-fingerprint", str(ref / "fingerprint.json"),
         "--reference-rows", str(ref / "rows"), "--diff-out", str(out / "diff.json")],
        step.argv, f"{label}-rerun",
    )
    seconds = time.monotonic() - started
    takeover = LOCK_TAKEOVER_NOTE in (work.logs() / f"{label}-rerun.err").read_text(errors="replace")
    if rerun.returncode != 0:
        return PointResult(point, killed, False, False, takeover, seconds,
                           error=_tail(work.logs() / f"{label}-rerun.err"))
    differences = json.loads((out / "diff.json").read_text())
    return PointResult(point, killed, True, not differences, takeover, seconds, differences)


def collector_bodies(seed: int) -> list[bytes]:
    spec = SyntheticSpec(events=COLLECTOR_EVENTS, jobs=20, seed=seed + 2, base_columns=6)
    return [json.dumps(event, sort_keys=True).encode() for event in synthetic_events(spec)]


def collector_ingest(work: Workspace, landing: Path, digest_out: Path, log_name: str) -> dict:
    work.restore("empty")
    proc = work.child(["--ingest-landing", str(landing), "--event-digest-out", str(digest_out)], (),
                      log_name)
    if proc.returncode != 0:
        raise RuntimeError(f"ingest of {landing} failed: {_tail(work.logs() / f'{log_name}.err')}")
    return dict(json.loads(digest_out.read_text()))


def prepare_collector(work: Workspace, bodies: list[bytes], log: Callable[[str], None]) -> dict:
    """The uninterrupted load and its ingest: the reference digest (computed once per work folder)."""
    ref = work.reference(COLLECTOR)
    digest_path = ref / "events.json"
    if digest_path.exists():
        return dict(json.loads(digest_path.read_text()))
    started = time.monotonic()
    ref.mkdir(parents=True, exist_ok=True)
    work.logs().mkdir(parents=True, exist_ok=True)
    landing = prepare_landing(work.root / "collector" / "landing")
    run_load(landing, bodies, None, 0, work.logs() / "collector-reference.log")
    reference = collector_ingest(work, landing, digest_path, "collector-reference-ingest")
    log(f"prepared the collector reference: {reference['rows']} events ({time.monotonic() - started:.0f}s)")
    return reference


def run_collector_point(work: Workspace, bodies: list[bytes], reference: dict, point: Point) -> PointResult:
    started = time.monotonic()
    label = point.label().replace(":", "_")
    landing = prepare_landing(work.root / "collector" / "landing")
    outcome = run_load(landing, bodies, point.step, point.delay_ms, work.logs() / f"{label}-collector.log")
    problems = check_landing(outcome, bodies, landed_lines(landing))
    out = work.root / "points" / label
    out.mkdir(parents=True, exist_ok=True)
    try:
        got = collector_ingest(work, landing, out / "events.json", f"{label}-ingest")
    except RuntimeError as error:
        return PointResult(point, outcome.killed, False, False, False, time.monotonic() - started, error=str(error))
    differences = compare_event_digests(reference, got)
    if problems:
        differences["landing"] = {"rows_reference": len(bodies), "rows_after": len(outcome.acknowledged),
                                  "first_key": "; ".join(problems), "side": "collector"}
    # The collector holds no warehouse lock: there is no lock to take over, so the note does not apply.
    return PointResult(point, outcome.killed, True, not differences, True, time.monotonic() - started, differences)


# ------------------------------------------------------------------------------------------------ report


def format_report(results: Sequence[PointResult], scenarios: Sequence[str]) -> str:
    header = f"{'scenario':<18} {'points':>6} {'killed':>6} {'converged':>9} {'mismatched':>10} {'rerun failed':>12}"
    lines = [header, "-" * len(header)]

    def row(name: str, subset: Sequence[PointResult]) -> str:
        return (f"{name:<18} {len(subset):>6} {sum(r.killed for r in subset):>6} "
                f"{sum(r.converged for r in subset):>9} {sum(r.rerun_ok and not r.converged for r in subset):>10} "
                f"{sum(not r.rerun_ok for r in subset):>12}")

    for scenario in scenarios:
        lines.append(row(scenario, [r for r in results if r.point.scenario == scenario]))
    lines.append(row("total", results))
    killed = [r for r in results if r.killed and r.point.scenario != COLLECTOR]  # the collector takes no lock
    if killed:
        lines.append(f"lock left by the killed process taken over with a message: "
                     f"{sum(r.takeover_message for r in killed)} of {len(killed)}")
    for result in results:
        if result.rerun_ok and not result.converged:
            for table, diff in sorted(result.differences.items()):
                lines.append(
                    f"MISMATCH {result.point.label()} {table}: rows {diff['rows_reference']} -> {diff['rows_after']}, "
                    f"first differing key {diff['first_key']!r} ({diff['side']})"
                )
        elif not result.rerun_ok:
            lines.append(f"RERUN FAILED {result.point.label()}: {result.error.splitlines()[-1:] or ''}")
    return "\n".join(lines)


def run_suite(
    work_dir: Path,
    points: int,
    seed: int,
    size: str,
    scenarios: Sequence[str] = SCENARIOS,
    replay: Sequence[Point] = (),
    log: Callable[[str], None] = print,
) -> list[PointResult]:
    work = Workspace(work_dir.resolve())
    batches = work.root / "batches"
    write_batch(batches / "batch-one", SIZES[size], seed)
    write_batch(batches / "batch-two", SIZES[size], seed + 1)
    all_steps = default_steps(batches / "batch-one", batches / "batch-two")
    wanted = set(scenarios) | {p.scenario for p in replay}
    chained = [i for i, s in enumerate(all_steps) if s.scenario in wanted]
    steps = all_steps[: max(chained) + 1] if chained else []  # the chain up to the last scenario asked for
    counts = prepare(work, steps, source_digest(batches) + f":{len(steps)}", log) if steps else {}
    by_scenario = {s.scenario: s for s in steps if s.scenario}
    bodies: list[bytes] = []
    reference: dict = {}
    if COLLECTOR in wanted:
        bodies = collector_bodies(seed)
        reference = prepare_collector(work, bodies, log)
        counts[COLLECTOR] = len(bodies) - 1
    planned = list(replay) or plan_points([s for s in SCENARIOS if s in wanted], counts, points, seed)
    results = []
    for index, point in enumerate(planned, 1):
        if point.scenario == COLLECTOR:
            result = run_collector_point(work, bodies, reference, point)
        else:
            result = run_point(work, by_scenario[point.scenario], point)
        status = "converged" if result.converged else ("MISMATCH" if result.rerun_ok else "RERUN FAILED")
        log(f"[{index}/{len(planned)}] {point.label():<28} killed={result.killed!s:<5} {status} "
            f"({result.seconds:.0f}s)")
        results.append(result)
    return results
