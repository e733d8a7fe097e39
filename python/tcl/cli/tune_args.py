"""``tcl tune``'s options, in the groups its ``--help`` lists them in, and the ones ``tcl
quickstart`` shares with it (the quick first round, the outputs)."""

from __future__ import annotations

import argparse
from typing import Any

from tcl.cli.args import (
    Options,
    add_rpc,
    dtype_name,
    input_file,
    input_shape,
    model_spec,
    network_name,
    non_negative_int,
    output_dir,
    output_file,
    platform_name,
    positive_float,
    positive_int,
    unroll_bound,
)

# ``tcl quickstart`` times its builds in 3 fresh processes where tcl tune takes 5: each process
# imports TVM or PyTorch anew (about 3 s on 2 cores), so the two fewer rounds take 8 s off a run
# that should end within two minutes (bench/README.md, *How long tcl quickstart takes*).
QUICKSTART_TIMING_PROCESSES = 3
# An LLVM optimisation level as an option takes it (--candidate-opt-level, --first-round-opt-level)
LLVM_LEVEL: dict[str, Any] = {"type": int, "choices": range(4), "metavar": "N"}


def add_tune_options(tune: Any) -> None:
    """Every option of ``tcl tune`` (its argparse parser), by group, in ``--help``'s order."""
    from tcl.tuning.options import DEFAULT_WORK_DIR
    from tcl.tuning.platforms import DEFAULT_PLATFORM, PRESETS

    _add_model(tune.add_argument_group("the model"))
    where = tune.add_argument_group("where it is tuned")
    where.add_argument(
        "--platform",
        default=DEFAULT_PLATFORM,
        type=platform_name,
        help=f"the target and threads the programs are tuned and timed for (default "
        f"{DEFAULT_PLATFORM}: this CPU's own instructions on 2 threads; cuda: this machine's "
        f"NVIDIA GPU; the presets: {', '.join(PRESETS)})",
    )
    where.add_argument(
        "--work-dir", default=DEFAULT_WORK_DIR, type=output_dir, help="tuning database and logs"
    )
    add_rpc(where)
    _add_budget(tune.add_argument_group("budget and cost model"))
    _add_rounds(tune.add_argument_group("rounds and measurements"))
    _add_quick_round(tune.add_argument_group("the quick first round and transplants"))
    _add_build(tune.add_argument_group("the library"))
    add_outputs(tune.add_argument_group("outputs"))


def _add_model(tune: Options) -> None:
    """What is tuned: the model, its inputs' shapes and types, its name."""
    tune.add_argument(
        "target_model",
        nargs="?",
        type=model_spec,
        metavar="MODEL",
        help="a zoo network, a torch.export program (.pt2), an ONNX model (.onnx) or "
        "FILE.py:FUNCTION returning (module, example_inputs)",
    )
    tune.add_argument(
        "--input-shape",
        action="append",
        type=input_shape,
        metavar="SHAPE",
        help="a .pt2 or .onnx model's input shape, e.g. 1,3,224,224 (repeat, in input order); "
        "fixes dynamic dimensions",
    )
    tune.add_argument(
        "--dtype",
        action="append",
        type=dtype_name,
        help="a .pt2 or .onnx model's input dtype (repeat, in input order; default: the model's)",
    )
    tune.add_argument("--network", type=network_name, help="a zoo network (same as MODEL)")
    tune.add_argument(
        "--name",
        help="the model's name in the report and the library's file name (default: the "
        "network, the file's stem, or FUNCTION of FILE.py:FUNCTION)",
    )


def _add_budget(group: Options) -> None:
    """How long the search goes and which cost model guides it."""
    from tcl.tuning.options import (
        COST_MODELS,
        DEFAULT_COST_MODELS,
        DEFAULT_TRIALS,
        HANDOFF_AT,
        TIMED_TRIALS,
    )

    group.add_argument(
        "--trials",
        type=positive_int,
        help=f"programs to measure (default {DEFAULT_TRIALS}; with --minutes, at most "
        f"{TIMED_TRIALS})",
    )
    group.add_argument(
        "--minutes",
        type=positive_float,
        help="a time budget for the search: no round starts after it, and a round being "
        "built then starts no more builds and cuts those running 8 s past it (every task still "
        "gets its first round)",
    )
    group.add_argument(
        "--cost-model",
        choices=COST_MODELS,
        help=f"default: {DEFAULT_COST_MODELS['cpu']} on a CPU (tcl's base model picks each "
        "task's first round, then xgb-prior), "
        f"{DEFAULT_COST_MODELS['cuda']} on a GPU (the base model's first round, then an XGB "
        "fitted on the run's measurements); tcl: the base model alone; tcl-learn: the base "
        "model corrected per task by what the run measured; xgb-prior: an XGB fitted "
        "beforehand on tcl's records, growing trees on the run's measurements",
    )
    group.add_argument(
        "--model",
        dest="model_path",
        metavar="PATH",
        help="tcl checkpoint for --cost-model tcl, tcl-learn, tcl+xgb, tcl-then-xgb or "
        "tcl-then-xgb-prior (default: the base model; in the NCHW16c layout, the one moved "
        "to blocked programs), an MLP state saved by tcl (.npz, "
        "tcl.integrations.tvm.mlp_state) for --cost-model mlp, or a booster "
        "saved by tcl (.ubj.gz, tcl.integrations.tvm.prior_xgb) for --cost-model xgb-prior",
    )
    group.add_argument(
        "--first-round-model",
        metavar="PATH",
        help="tcl checkpoint that ranks each task's first round instead of --model, for "
        "--cost-model tcl+xgb, tcl-then-xgb or tcl-then-xgb-prior (default: --model's)",
    )
    group.add_argument(
        "--hand-off",
        type=non_negative_int,
        default=0,
        metavar="K",
        help="programs of a task that --cost-model tcl-then-xgb or tcl-then-xgb-prior measures "
        f"before its learner ranks the task (default 0: {HANDOFF_AT}, one first round; with a "
        "quick first round of 2, --hand-off 2 gives the learner the first full round)",
    )


def _add_rounds(group: Options) -> None:
    """How each round searches, picks and measures a task's programs."""
    from tcl.tuning.allot import ALLOTS, DEFAULT_ALLOT, DEFAULT_TASK_SCHEDULER, TASK_SCHEDULERS
    from tcl.tuning.options import (
        DEFAULT_POPULATION,
        TIMED_LATER_POPULATION,
        TIMED_SHARE_BEST,
        TIMED_TASK_SCHEDULER,
    )

    group.add_argument(
        "--per-round",
        type=non_negative_int,
        metavar="N",
        help="programs of a task each of its rounds measures (default: a quarter of each task's "
        "share of --trials, at most 16; a quick --first-round measures its own)",
    )
    group.add_argument(
        "--population",
        type=positive_int,
        default=DEFAULT_POPULATION,
        help="programs each round's evolutionary search of a task generates, mutates and scores "
        f"(default {DEFAULT_POPULATION}; fewer: faster rounds, a narrower search)",
    )
    group.add_argument(
        "--later-population",
        type=non_negative_int,
        metavar="N",
        help="the population of each task's rounds after its first full one, which the "
        f"learner ranks (default {TIMED_LATER_POPULATION} with a time budget, --minutes, else 0: "
        "--population's)",
    )
    group.add_argument(
        "--explore",
        type=non_negative_int,
        default=0,
        help="programs of each round of a task drawn at random from its search's initial "
        "population instead of picked by the cost model (default 0: MetaSchedule's "
        "epsilon-greedy share, 5%%, rounds to none at tcl's rounds of at most 16)",
    )
    group.add_argument(
        "--share-best",
        type=non_negative_int,
        metavar="K",
        help="each full round of a task measures up to K of the other tasks' best programs so "
        f"far, replayed on it, in place of its K lowest-scored picks (default {TIMED_SHARE_BEST} "
        "with a time budget, --minutes, else 0: none)",
    )
    group.add_argument(
        "--allot",
        choices=ALLOTS,
        default=DEFAULT_ALLOT,
        help=f"how a round's measurements are shared among the tasks (default {DEFAULT_ALLOT}: "
        "the same for each; time: by the square root of each task's share of the network's "
        "time, weight x FLOPs until every task is measured, weight x its best program after)",
    )
    group.add_argument(
        "--task-scheduler",
        choices=TASK_SCHEDULERS,
        help=f"which task has the next round (default {DEFAULT_TASK_SCHEDULER}, or "
        f"{TIMED_TASK_SCHEDULER} under --minutes with a quick round; gradient: MetaSchedule's, "
        "after each task's first round the one whose round is expected to take most off the "
        "network's time, its "
        "rounds counted as rounds; programs: the same, its rounds counted by the programs they "
        "measured, so that a quick round of 2 counts as a fraction of a full one; "
        "programs-floor: the same, a task's programs counted as at least 4; "
        "transplants-first: gradient, but every task's round of transplants, the round after "
        "its quick one, before any task's full round; per-second: every task's round of "
        "transplants first, the heaviest first, then programs-floor's gradient over the "
        "seconds a program of the task has taken)",
    )
    group.add_argument(
        "--confident",
        type=non_negative_int,
        default=0,
        metavar="K",
        help="after each task's first round, measure only as many of a round's best-scored "
        "picks as the cost model's ranking of the task's last rounds calls for (twice as far "
        "down as their best programs were), at least K (default 0: the whole round)",
    )
    group.add_argument(
        "--post-opt",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="spend the last N of the trials on TVM's Droplet post-optimization: coordinate "
        "descent from each task's best program, the heaviest tasks first (default 0: none; "
        "with --minutes it follows the search's time budget)",
    )
    group.add_argument(
        "--learn-earlier",
        action="store_true",
        help="on a work directory tuned before, let the cost model first learn every program "
        "its database holds and start each task it holds past its first rounds (default: the "
        "model learns only this run's measurements and every task starts with its first "
        "rounds, as a MetaSchedule run resumes)",
    )
    group.add_argument(
        "--cold-cache",
        action="store_true",
        help="time each candidate in single runs after flushing its weights and outputs from "
        "the caches, as inside a network (default: repeated runs of at least 20 ms, warm)",
    )
    group.add_argument(
        "--repeat-ms",
        type=positive_int,
        metavar="N",
        help="time each candidate in 3 repeats that run its kernel for at least N ms each "
        "(default 20)",
    )
    group.add_argument(
        "--candidate-opt-level",
        **LLVM_LEVEL,
        help="build the candidates measured on a CPU at LLVM optimisation level N (0-3); "
        "the tuned network is built at TVM's level 3 whatever N is (default: 3)",
    )


def _add_quick_round(group: Options) -> None:
    """Each task's quick first round, and the other tasks' best programs replayed on it."""
    from tcl.tuning.allot import ALLOTS, TRANSPLANT_ALLOTS

    add_first_round(group)
    group.add_argument(
        "--first-round-allot",
        choices=ALLOTS,
        help="how the quick --first-round is shared among the tasks (default even: K each; "
        "time: by the square root of each task's share of the network's FLOPs, at least 1, "
        "at most K, so that light tasks measure fewer and the network has a latency sooner)",
    )
    group.add_argument(
        "--first-round-unroll",
        type=unroll_bound,
        metavar="N",
        help="the quick --first-round's picks and transplants are programs that unroll their "
        "loops by at most N steps (MetaSchedule draws 0, 16, 64 or 512 on a CPU), which build "
        "several times faster; the best-scored program past N is measured right after it "
        "(default 64 under --minutes, else any)",
    )
    group.add_argument(
        "--first-round-repeats",
        type=non_negative_int,
        metavar="N",
        help="time each program of the quick --first-round in N repeats of at least 10 ms "
        "(default 0: as the rounds after it, 3 of at least 20 ms)",
    )
    group.add_argument(
        "--first-round-opt-level",
        **LLVM_LEVEL,
        help="build the programs of the quick --first-round measured on a CPU at LLVM "
        "optimisation level N (0-3), the rounds after it as --candidate-opt-level says; the "
        "tuned network is built at TVM's level 3 (default: as the rounds after it)",
    )
    group.add_argument(
        "--register-block",
        action=argparse.BooleanOptionalAction,
        help="on a CPU, measure the best program of each task's quick --first-round rewritten "
        "to keep a block of its output (up to 8 rows by one vector) in registers across the "
        "reduction, first in the round after it (default: on with --minutes, else off)",
    )
    group.add_argument(
        "--transplants",
        type=non_negative_int,
        metavar="N",
        help="of each task's quick --first-round, measure N of other tasks' best programs "
        "replayed on it, the ones that keep most of their tile decisions, in place of as many "
        "of the cost model's picks; N equal to the first round measures a task's transplants "
        "alone where it has that many, with no search (default 0: none)",
    )
    group.add_argument(
        "--transplant-round",
        type=non_negative_int,
        metavar="M",
        help="after each task's quick --first-round, measure its next M transplants in a round "
        "of their own, before its first full round: no search, and the tasks that hold the "
        "network's time get theirs first (default 3 with --minutes and --transplants, else 0)",
    )
    group.add_argument(
        "--transplant-allot",
        choices=TRANSPLANT_ALLOTS,
        help="how the --transplant-round is shared among the tasks (default even: M each; "
        "time: by the square root of each task's share of the network's time after the quick "
        "round, at least 1, at most 4M; time-exact: the same, but more than M only with "
        "transplants that keep every tile decision of their donor)",
    )
    group.add_argument(
        "--donors",
        type=input_file,
        metavar="FILE",
        help="the donor file --transplants replays programs from (bench/bench_transplant.py "
        "--save-donors writes one; default: the one packaged for the device, the zoo's training "
        "networks on CPUs; none is packaged for GPUs)",
    )


def add_first_round(parser: Options) -> None:
    """``--first-round K`` (``TuneOptions.first_round``; unset, ``TuneOptions.of`` decides)."""
    from tcl.tuning.options import TIMED_FIRST_ROUND

    parser.add_argument(
        "--first-round",
        type=non_negative_int,
        metavar="K",
        help="a quick first round: each task's first round measures only the cost model's top "
        "K of 32 random programs, so that the whole network has a tuned latency sooner (default "
        f"{TIMED_FIRST_ROUND} with a time budget, --minutes, else 0; 0: the first round like the "
        "others)",
    )


def _add_build(tune: Options) -> None:
    """How the library is built and linked."""
    from tcl.tuning.layout import AS_IMPORTED, CONV_LAYOUTS

    tune.add_argument(
        "--exact-math",
        action="store_true",
        help="keep GELU, erf, exp, tanh, sigmoid, SiLU and softmax as exact library calls "
        "(default: TVM's fast float32 approximations, which vectorize)",
    )
    tune.add_argument(
        "--weight-prepack",
        action="store_true",
        help="let every kernel read its weights in the layout its schedule walks them, "
        "transformed once when the library is built (apache-tvm's cpu_weight_prepack)",
    )
    tune.add_argument(
        "--conv-layout",
        choices=[AS_IMPORTED, *sorted(CONV_LAYOUTS)],
        help="tune and build the 2-D convolutions in this data layout (NCHW: as the model "
        "was exported from PyTorch; default: NCHW16c on a CPU with AVX-512, else NCHW); the "
        "library's inputs and outputs keep theirs",
    )
    tune.add_argument(
        "--cc",
        help="compiler that links the library (a cross compiler, e.g. aarch64-linux-gnu-g++, "
        "for a device of another architecture behind --rpc-tracker); default: the system's c++",
    )


def add_outputs(parser: Options) -> None:
    from tcl.tuning.options import TuneOptions

    parser.add_argument("--tiny", action="store_true", help="the small test input shape")
    parser.add_argument(
        "--timing-processes",
        dest="rounds",
        type=positive_int,
        metavar="N",
        help="fresh processes that time the tuned and untuned builds, PyTorch eager in one of "
        "its own beside each; on an RPC device, interleaved rounds there (default: tcl tune "
        f"{TuneOptions.rounds}, tcl quickstart {QUICKSTART_TIMING_PROCESSES})",
    )
    parser.add_argument(
        "--json", type=output_file, help="report path (default WORK_DIR/report.json)"
    )
    parser.add_argument(
        "--png", type=output_file, help="latency-curve plot (default: the report's path, .png)"
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show MetaSchedule's log and TVM's warnings on the terminal too",
    )
