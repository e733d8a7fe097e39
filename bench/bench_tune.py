"""The headline: tuning whole held-out networks with tcl's cost model against MetaSchedule's XGB
(its default) and its MLP (the TenSet-MLP port) pre-trained on the committed data, at the trial
budgets users spend, on this machine, against PyTorch eager.

tcl uses the packaged base model (trained on the committed dataset's training networks; the
networks tuned here are held out). The MLP is pre-trained here on the same committed records of
the platform's training networks (replayed through TVM for its features) and saved once; every
network's run starts from that state. XGB starts from nothing, as stock MetaSchedule does.

Each run tunes one network with one cost model and search seed for --trials trials. Afterwards
the network is built from each run's database as it stood at every checkpoint (its first 64,
128, ... measured records), and every build of a network, with PyTorch eager, is timed under
tcl's protocol (``tcl.tuning.isolated``: each build in --processes fresh processes, shuffled
order, median and range across processes; PyTorch eager in a fresh process each round). A
checkpoint's wall time is the tuner's time when its last record was measured.

Besides the trial checkpoints, each run is built as it stood at the end of its first round
(when every task had a measured program: the first deployable tuned network) and after each of
--at-seconds of tuning.

Per network it reports: the built latency against wall time (curves, also as a PNG), the
estimated latency beside the built one, the time each cost model needs to build a network faster
than PyTorch eager (at checkpoint granularity, or never), the time it needs to build one as fast
as XGB's final build (and the ratio against XGB's own time to it, bracketed by the last
checkpoint still slower; and the same by the tuner's estimates, which carry no timing noise),
the built latency after each of --at-seconds and how many times that time XGB needs to reach the
estimate a tcl run had then, the final-latency ratios vs the MLP and XGB at each trial
checkpoint, and the tuning time to the MLP's final estimate (the estimate is known after every
trial). Prints one JSON line.

Each run's report is kept in OUT/<network>-<model>-s<seed>/ and reused (resume after an
interruption; --fresh redoes everything), and so is every checkpoint's library. --runs-only
stops after the runs: split a long benchmark into invocations that each fit a sitting, then
evaluate everything in a last one.

Usage: python bench/bench_tune.py [--trials 1024] [--networks resnet50,mobilenet_v2,bert_tiny]
       [--models tcl,mlp,xgb] [--seeds 0,1] [--baseline-seeds 0] [--platform cpu-avx2-1t]
       [--checkpoints 64,128,256,512,1024] [--at-seconds 30,60,120,300,600,1200]
       [--processes 5] [--run-rounds 5] [--out bench/out/tune] [--minutes M] [--runs-only]
       [--exact-math] [--weight-prepack] [--mlp-data PRESET]

On a 1-thread platform, run it pinned to one core (`taskset -c 1 python bench/bench_tune.py`):
search, build, measurement and the final timings then share that core and are not disturbed by
work on the other.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import machine
from _tune_summary import plot_runs, summarize

from tcl import zoo
from tcl.records.dataset import load_dataset
from tcl.tuning import platforms
from tcl.tuning.latency import build_library, time_network
from tcl.tuning.layout import AS_IMPORTED, CONV_LAYOUTS
from tcl.tuning.tune import TuneReport, tune_network, write_report

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("tcl", "mlp", "xgb")
PACKED = "-packed"  # a model's runs with pre-packed weights (tcl-packed: tcl tune --weight-prepack)
# its convolutions tuned in another layout (tcl-nhwc: tcl tune --conv-layout NHWC)
LAYOUTS = {f"-{name.lower()}": name for name in CONV_LAYOUTS}
POPULATION = re.compile(r"-p(\d+)$")  # its search's population (tcl-p32: tcl tune --population 32)
LATER_POPULATION = re.compile(r"-l(\d+)$")  # its later rounds' (tcl-l64: --later-population 64)
LATER_ITERS = re.compile(r"-e(\d+)$")  # their evolution steps (tcl-l64-e2: later_iters=2)
EXPLORE = re.compile(r"-x(\d+)$")  # random picks a round (tcl-x1: tcl tune --explore 1)
SHARE_BEST = re.compile(r"-b(\d+)$")  # other tasks' bests a round (tcl-b2: --share-best 2)
# a quick first round (tcl-f2: tcl tune --first-round 2; -f2time: --first-round-allot time)
FIRST = re.compile(r"-f(\d+)(time)?$")
QUICK_POPULATION = re.compile(r"-q(\d+)$")  # its search's population (tcl-f2-q128)
REPEATS = re.compile(r"-n(\d+)$")  # its programs' timing repeats (tcl-f2-n2: 2 of 10 ms)
ITERS = re.compile(r"-g(\d+)$")  # its evolution steps (tcl-f2-g0: TuneOptions.first_round_iters)
UNROLL = re.compile(r"-u(\d+)$")  # its picks' unroll bound (tcl-f2-u64: --first-round-unroll 64)
TRANSPLANTS = re.compile(r"-t(\d+)$")  # of its picks, transplants (tcl-f2-t1: --transplants 1)
# a round of more after it (--transplant-round M; -mMtime, -mMtime-exact: --transplant-allot)
MORE_TRANSPLANTS = re.compile(r"-m(\d+)(time-exact|time)?$")
CONFIDENT = re.compile(r"-c(\d+)$")  # rounds trimmed by confidence (tcl tune --confident K)
PER_ROUND = re.compile(r"-r(\d+)$")  # programs of a task a round (tcl-r4: tcl tune --per-round 4)
HAND_OFF = re.compile(r"-h(\d+)$")  # the hand-off point (tcl-then-xgb-prior-h2: --hand-off 2)
POST_OPT = re.compile(r"-d(\d+)$")  # a Droplet pass of the last N trials (tcl tune --post-opt N)
# rounds counted by their programs (tcl-f2-progs: tcl tune --task-scheduler programs; -progsf:
# programs-floor, a task's programs counted as at least 4)
PROGRAMS = "-progs"
PROGRAMS_FLOOR = "-progsf"
# every task's round of transplants before any full round (--task-scheduler transplants-first)
TRANSPLANTS_FIRST = "-tfirst"
PER_SECOND = "-psec"  # the same, then the gradient a second (--task-scheduler per-second)
TIME = "-time"  # picks shared among tasks by their time (tcl-f2-time: tcl tune --allot time)
COLD = "-cold"  # candidates timed with cold caches (tcl-cold: tcl tune --cold-cache)
REPEAT_MS = re.compile(r"-ms(\d+)$")  # repeats of at least N ms (tcl-ms5: tcl tune --repeat-ms 5)
# candidates built at LLVM level N (tcl-o1: tcl tune --candidate-opt-level 1)
OPT_LEVEL = re.compile(r"-o(\d)$")
# its quick first round built at LLVM level N (tcl-f2-qo1: tcl tune --first-round-opt-level 1)
QUICK_OPT_LEVEL = re.compile(r"-qo(\d)$")
REGISTER_BLOCK = "-rb"  # the quick round's best register-blocked (tcl tune --register-block)
CHECKPOINT = "@"  # tcl's model from OUT/NAME.pt (tcl-then-xgb@v1: tcl tune --model OUT/v1.pt)
FIRST_MODEL = "~"  # and its first round's (tcl-then-xgb@v2~v1: --first-round-model OUT/v1.pt)


@dataclass
class Run:
    network: str
    kind: str
    seed: int
    work: Path
    report: TuneReport

    @property
    def label(self) -> str:
        return f"{self.kind}-s{self.seed}"


def pretrain_mlp(preset: str, path: Path) -> dict[str, Any]:
    """MetaSchedule's MLP trained on the committed records of ``preset``'s training networks."""
    from tcl.integrations.tvm import baselines as tcm
    from tcl.integrations.tvm.mlp_state import save_mlp

    # a platform's random programs (a host may have only search-drawn ones, in search/)
    snapshots = sorted(
        p for p in (ROOT / "data").glob(f"{preset}-*") if (p / "manifest.json").exists()
    )
    if not snapshots:
        raise SystemExit(f"no committed data for {preset} in {ROOT / 'data'} (see --mlp-data)")
    # The records tcl's base model learnt from (collected on the host that made the dataset):
    # both pre-trained cost models see the same data.
    records = load_dataset(snapshots[0]).without_networks(list(zoo.HELD_OUT)).records
    start = time.time()
    save_mlp(tcm.fit("mlp", records), path)
    return {"records": len(records), "from": snapshots[0].name, "seconds": time.time() - start}


def cost_model_of(kind: str) -> tuple[str, dict[str, Any]]:
    """The cost model a run's kind names, and the tune options its suffixes ask for."""
    options: dict[str, Any] = {}
    kind, _, checkpoint = kind.partition(CHECKPOINT)
    checkpoint, _, first = checkpoint.partition(FIRST_MODEL)
    if checkpoint:
        options["checkpoint"] = checkpoint
    if first:
        options["first_checkpoint"] = first
    if kind.endswith(REGISTER_BLOCK):
        options["register_block"] = True
        kind = kind.removesuffix(REGISTER_BLOCK)
    repeat_ms = REPEAT_MS.search(kind)
    if repeat_ms:
        options["repeat_ms"] = int(repeat_ms[1])
        kind = kind[: repeat_ms.start()]
    if kind.endswith(COLD):
        options["cold_cache"] = True
        kind = kind.removesuffix(COLD)
    opt_level = OPT_LEVEL.search(kind)
    if opt_level:
        options["candidate_opt_level"] = int(opt_level[1])
        kind = kind[: opt_level.start()]
    quick_opt_level = QUICK_OPT_LEVEL.search(kind)
    if quick_opt_level:
        options["first_round_opt_level"] = int(quick_opt_level[1])
        kind = kind[: quick_opt_level.start()]
    if kind.endswith(PER_SECOND):
        options["task_scheduler"] = "per-second"
        kind = kind.removesuffix(PER_SECOND)
    if kind.endswith(TRANSPLANTS_FIRST):
        options["task_scheduler"] = "transplants-first"
        kind = kind.removesuffix(TRANSPLANTS_FIRST)
    if kind.endswith(PROGRAMS_FLOOR):
        options["task_scheduler"] = "programs-floor"
        kind = kind.removesuffix(PROGRAMS_FLOOR)
    if kind.endswith(PROGRAMS):
        options["task_scheduler"] = "programs"
        kind = kind.removesuffix(PROGRAMS)
    if kind.endswith(TIME):
        options["allot"] = "time"
        kind = kind.removesuffix(TIME)
    confident = CONFIDENT.search(kind)
    if confident:
        options["confident"] = int(confident[1])
        kind = kind[: confident.start()]
    post_opt = POST_OPT.search(kind)
    if post_opt:
        options["post_opt"] = int(post_opt[1])
        kind = kind[: post_opt.start()]
    per_round = PER_ROUND.search(kind)
    if per_round:
        options["per_round"] = int(per_round[1])
        kind = kind[: per_round.start()]
    hand_off = HAND_OFF.search(kind)
    if hand_off:
        options["hand_off"] = int(hand_off[1])
        kind = kind[: hand_off.start()]
    iters = ITERS.search(kind)
    if iters:
        options["first_round_iters"] = int(iters[1])
        kind = kind[: iters.start()]
    quick_population = QUICK_POPULATION.search(kind)
    if quick_population:
        options["first_round_population"] = int(quick_population[1])
        kind = kind[: quick_population.start()]
    repeats = REPEATS.search(kind)
    if repeats:
        options["first_round_repeats"] = int(repeats[1])
        kind = kind[: repeats.start()]
    more = MORE_TRANSPLANTS.search(kind)
    if more:
        options["transplant_round"] = int(more[1])
        if more[2]:
            options["transplant_allot"] = more[2]
        kind = kind[: more.start()]
    transplants = TRANSPLANTS.search(kind)
    if transplants:
        options["transplants"] = int(transplants[1])
        kind = kind[: transplants.start()]
    unroll = UNROLL.search(kind)
    if unroll:
        options["first_round_unroll"] = int(unroll[1])
        kind = kind[: unroll.start()]
    quick = FIRST.search(kind)
    if quick:
        options["first_round"] = int(quick[1])
        if quick[2]:
            options["first_round_allot"] = quick[2]
        kind = kind[: quick.start()]
    share_best = SHARE_BEST.search(kind)
    if share_best:
        options["share_best"] = int(share_best[1])
        kind = kind[: share_best.start()]
    explore = EXPLORE.search(kind)
    if explore:
        options["explore"] = int(explore[1])
        kind = kind[: explore.start()]
    later_iters = LATER_ITERS.search(kind)
    if later_iters:
        options["later_iters"] = int(later_iters[1])
        kind = kind[: later_iters.start()]
    later_population = LATER_POPULATION.search(kind)
    if later_population:
        options["later_population"] = int(later_population[1])
        kind = kind[: later_population.start()]
    population = POPULATION.search(kind)
    if population:
        options["population"] = int(population[1])
        kind = kind[: population.start()]
    if kind.endswith(PACKED):
        options["weight_prepack"] = True
        kind = kind.removesuffix(PACKED)
    options["conv_layout"] = AS_IMPORTED  # a name without a layout is NCHW on every platform
    for suffix, layout in LAYOUTS.items():
        if kind.endswith(suffix):
            options["conv_layout"] = layout
            kind = kind.removesuffix(suffix)
    return kind, options


def tune_or_reuse(
    network: str, kind: str, seed: int, args: argparse.Namespace, platform: platforms.Platform
) -> Run:
    work = args.out / f"{network}-{kind}-s{seed}"
    saved = work / "report.json"
    if saved.exists() and not args.fresh:  # resume: every run's report is kept
        report = TuneReport.from_json(json.loads(saved.read_text()))
        if report.platform != platform.name:  # one platform's runs never stand for another's
            raise SystemExit(
                f"{work} holds a {report.platform} run, not {platform.name}: "
                "give each platform its own --out"
            )
        return Run(network, kind, seed, work, report)
    if work.exists():
        shutil.rmtree(work)
    cost_model, options = cost_model_of(kind)
    checkpoint = options.pop("checkpoint", None)
    first = options.pop("first_checkpoint", None)
    if first:
        options["first_round_model"] = str(args.out / f"{first}.pt")
    model_path = None
    if cost_model == "mlp":
        model_path = str(args.out / "mlp_pretrained.npz")
    elif checkpoint:
        model_path = str(args.out / f"{checkpoint}.pt")
    if args.weight_prepack:  # every run pre-packed, whatever its kind says
        options["weight_prepack"] = True
    if args.run_rounds:
        options["rounds"] = args.run_rounds
    report = tune_network(
        network,
        platform,
        args.trials,
        work,
        cost_model=cost_model,
        model_path=model_path,
        seed=seed,
        exact_math=args.exact_math,
        minutes=args.minutes,
        **options,
    )
    write_report(report, saved)
    print("\n".join(report.lines()), flush=True)
    return Run(network, kind, seed, work, report)


def database_prefix(work: Path, trials: int, dest: Path) -> Path:
    """A copy of ``work``'s MetaSchedule database holding only its first ``trials`` records (the
    file is append-only: the database as it stood then), with a GPU run's untuned kernels."""
    from tcl.tuning.untuned import UNTUNED_FILE

    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(work / "database_workload.json", dest / "database_workload.json")
    if (work / UNTUNED_FILE).exists():
        shutil.copy(work / UNTUNED_FILE, dest / UNTUNED_FILE)
    with open(work / "database_tuning_record.json") as src:
        lines = [line for _, line in zip(range(trials), src, strict=False)]
    (dest / "database_tuning_record.json").write_text("".join(lines))
    return dest


def checkpoint_libraries(
    work: Path, weight_prepack: bool, checkpoints: list[int], mod: Any, target: Any
) -> dict[int, Path]:
    """The network built from the database in ``work`` at each checkpoint (kept as
    WORK/at<N>.so; a run with fewer records than a checkpoint gives its whole database)."""
    with open(work / "database_tuning_record.json") as f:
        measured = sum(1 for _ in f)
    out = {}
    for trials in sorted({min(c, measured) for c in checkpoints}):
        library = work / f"at{trials}.so"
        if not library.exists():
            prefix = database_prefix(work, trials, work / "prefix")
            partial = build_library(
                prefix, mod, target, library.with_suffix(".tmp.so"), weight_prepack=weight_prepack
            )
            os.replace(partial, library)  # a kept library is a whole one
            shutil.rmtree(prefix)
        out[trials] = library
    return out


def timed_checkpoints(curve: list[dict[str, Any]], seconds: list[float]) -> list[int]:
    """The trials a run had measured when its network first had a latency (the end of its
    first round: every task measured) and at each of ``seconds`` of tuning after that."""
    if not curve:
        return []
    out = [int(curve[0]["trial"])]
    for limit in seconds:
        within = [int(p["trial"]) for p in curve if p["seconds"] <= limit]
        if within:
            out.append(within[-1])
    return out


def time_checkpoints(
    network: str, runs: list[Run], args: argparse.Namespace, platform: platforms.Platform
) -> dict[str, Any]:
    """Every checkpoint build of ``network`` and PyTorch eager, timed under one protocol."""
    from tcl.tuning.compile import as_tuned
    from tcl.zoo.extract import import_network

    net = zoo.get(network)
    example = zoo.example_input(net)
    imported = import_network(zoo.module(net, example), example)
    libraries = {}
    for run in runs:
        mod = as_tuned(imported, run.report.settings)  # the network as the run tuned it
        checkpoints = args.checkpoints + timed_checkpoints(run.report.curve, args.at_seconds)
        built = checkpoint_libraries(
            run.work, run.report.weight_prepack, checkpoints, mod, platform.tvm_target()
        )
        libraries.update({f"{run.label}@{n}": path for n, path in built.items()})
    timings, load = time_network(network, platform, libraries, processes=args.processes)
    return {"timings": timings, "machine_load": load}


def torch_build() -> dict[str, str]:
    """The PyTorch that "torch" timed: its version and the widest vector ISA its kernels use on
    this CPU (a platform's target may be narrower: cpu-avx2-1t on an AVX-512 CPU)."""
    import torch

    return {"version": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=1024)
    parser.add_argument("--networks", default="resnet50,mobilenet_v2,bert_tiny")
    parser.add_argument(
        "--models",
        default=",".join(MODELS),
        help="cost models to run; MODEL:S1/S2 gives one its own seeds (e.g. tcl+xgb:0); "
        f"MODEL{PACKED} tunes with pre-packed weights (tcl tune --weight-prepack), "
        f"MODEL{'/'.join(LAYOUTS)} its convolutions in that layout (--conv-layout), MODEL-pN "
        f"with a search population of N (tcl tune --population N), MODEL-lN with a population "
        "of N in each task's rounds after its first full one (--later-population N), "
        "MODEL-lN-eK with K evolution steps in those rounds' search (later_iters=K), "
        "MODEL-xN with N random picks "
        "a round (--explore N), MODEL-fK with a quick first round of K (--first-round K), "
        "MODEL-fK-tN with N of that round's picks other tasks' best programs (--transplants N), "
        "MODEL-fK-tN-mM with a round of M more after it (--transplant-round M; -mMtime, "
        "-mMtime-exact: shared by time, --transplant-allot time or time-exact), "
        "MODEL-fK-qN with that round's search of population N (first_round_population=N), "
        "MODEL-fK-nN timing that round's programs in N repeats of at least 10 ms "
        "(--first-round-repeats N), "
        "MODEL-fK-gN with that round's search evolved N generations (first_round_iters=N), "
        "MODEL-hK handing each task to the learner after K of its programs (--hand-off K), "
        "MODEL-rN measuring N programs of a task a round (--per-round N), "
        "MODEL-dN with the last N trials spent on Droplet's post-optimization (--post-opt N), "
        "MODEL-cK with each task's rounds after its first trimmed by confidence (--confident K), "
        f"MODEL{TIME} with each round's picks shared by the tasks' time (--allot time), "
        f"MODEL{PROGRAMS} with the tasks' rounds counted by their programs "
        f"(--task-scheduler programs; MODEL{PROGRAMS_FLOOR}: programs-floor; "
        f"MODEL{TRANSPLANTS_FIRST}: transplants-first; MODEL{PER_SECOND}: per-second), "
        "MODEL-qoN with the quick first round's built at LLVM level N "
        "(--first-round-opt-level N), "
        "MODEL-oN with the candidates built at LLVM level N (--candidate-opt-level N), "
        f"MODEL{COLD} timed with cold "
        f"caches (tcl tune --cold-cache), MODEL-fK{REGISTER_BLOCK} with the quick round's best "
        "program of each task register-blocked after it (--register-block), "
        f"MODEL{CHECKPOINT}NAME with the tcl checkpoint "
        f"OUT/NAME.pt (tcl tune --model), NAME{FIRST_MODEL}FIRST and OUT/FIRST.pt ranking "
        "each task's first round (--first-round-model); in that order, e.g. "
        f"tcl-then-xgb-p32-l16-e2-x1-f2-t1-n2-q128-g4-h2-r8-d64-c2-time-progs-qo1-o1-cold-rb@v2{FIRST_MODEL}v1:0",
    )
    parser.add_argument("--seeds", default="0,1", help="search seeds of tcl's runs (tcl, tcl+xgb)")
    parser.add_argument("--baseline-seeds", default="0", help="search seeds of the baselines")
    parser.add_argument("--platform", default="cpu-avx2-1t")
    parser.add_argument(
        "--mlp-data",
        help="the committed platform whose records pre-train the MLP (default: --platform's; "
        "for cpu-native-1t on an AVX-512 CPU, e.g. cpu-native-2t, the AVX-512 records)",
    )
    parser.add_argument("--checkpoints", default="64,128,256,512,1024")
    parser.add_argument(
        "--at-seconds",
        default="30,60,120,300,600,1200",
        help="also build each run as it stood after these seconds of tuning (and at the end of "
        "its first round)",
    )
    parser.add_argument("--processes", type=int, default=5, help="timing processes per build")
    parser.add_argument(
        "--run-rounds",
        type=int,
        help="fresh processes in which each run times its own final build, the untuned one and "
        "PyTorch eager (tcl tune's timing; default as tcl tune, 5)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "tune")
    parser.add_argument(
        "--png", type=Path, help="where the curves are drawn (default: OUT/tune_curves.png)"
    )
    parser.add_argument("--fresh", action="store_true", help="redo every run")
    parser.add_argument("--exact-math", action="store_true", help="as tcl tune --exact-math")
    parser.add_argument(
        "--weight-prepack", action="store_true", help="every run as tcl tune --weight-prepack"
    )
    parser.add_argument(
        "--minutes",
        type=float,
        help="stop each run after the round that passes this many minutes of tuning (tcl tune "
        "--minutes; --trials still sets the rounds' sizes and bounds the run)",
    )
    parser.add_argument("--runs-only", action="store_true", help="tune; do not evaluate")
    args = parser.parse_args()
    args.checkpoints = [int(c) for c in args.checkpoints.split(",") if int(c) <= args.trials]
    args.at_seconds = [float(t) for t in args.at_seconds.split(",") if t]
    platform = platforms.get(args.platform)
    args.out.mkdir(parents=True, exist_ok=True)
    models = args.models.split(",")
    mlp_path = args.out / "mlp_pretrained.npz"
    mlp_pretraining: dict[str, Any] = {"reused": str(mlp_path)}
    mlp_runs = any(cost_model_of(m.partition(":")[0])[0] == "mlp" for m in models)
    if mlp_runs and (args.fresh or not mlp_path.exists()):
        mlp_pretraining = pretrain_mlp(args.mlp_data or platform.name, mlp_path)

    runs: dict[str, list[Run]] = {}
    for network in args.networks.split(","):
        runs[network] = []
        for item in models:
            kind, _, own = item.partition(":")  # "tcl+xgb:0/1": this model's own seeds
            seeds = own.replace("/", ",") or (
                args.seeds if kind.startswith("tcl") else args.baseline_seeds
            )
            for seed in (int(s) for s in seeds.split(",")):
                runs[network].append(tune_or_reuse(network, kind, seed, args, platform))
    if args.runs_only:
        return
    timed = {network: time_checkpoints(network, rs, args, platform) for network, rs in runs.items()}
    args.png = args.png or args.out / "tune_curves.png"
    plot_runs(runs, timed, args.png, f"{platform.name}, up to {args.trials} trials")
    summary = summarize(runs, timed, args.checkpoints, args.at_seconds)
    summary.update(
        {
            "trials": args.trials,
            "checkpoints": args.checkpoints,
            "at_seconds": args.at_seconds,
            "platform": platform.to_dict(),
            "mlp_pretraining": mlp_pretraining,
            "png": str(args.png),
            "method": f"one tuning run per network, cost model and seed; every checkpoint's "
            f"build timed in {args.processes} fresh processes each (shuffled order, median "
            "[range] across processes, PyTorch eager in a fresh process each round); times: tuner "
            "wall time at the checkpoint",
            "cpu_affinity": sorted(os.sched_getaffinity(0)),
            "torch": torch_build(),
            "machine": machine(),
        }
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
