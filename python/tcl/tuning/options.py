"""The options of one tuning run: made once (from ``tcl tune``'s arguments or ``tcl.tune``'s
keywords), handed to the search, the build and the timing, and saved whole in the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from tcl.tuning.allot import (
    DEFAULT_ALLOT,
    DEFAULT_TASK_SCHEDULER,
    TRANSPLANT_ALLOTS,
    check_allot,
    check_task_scheduler,
)
from tcl.tuning.layout import AS_IMPORTED, check_conv_layout, default_conv_layout

# What `tcl tune` and tcl.tune do unless told: the trials of a run, where its work goes.
DEFAULT_TRIALS = 200
# With a time budget (``minutes``) and no trial count: the most a run measures.
TIMED_TRIALS = 1024
DEFAULT_WORK_DIR = "tcl-tune"

# The cost models a search can use (tcl.integrations.tvm.baselines.make_cost_model).
COST_MODELS = (
    "tcl",
    "tcl-learn",
    "tcl+xgb",
    "tcl-then-xgb",
    "tcl-then-xgb-prior",
    "xgb-prior",
    "xgb",
    "mlp",
    "random",
)
# The one it uses unless told, by the device the programs run on: the base model picks each
# task's first round, an XGB learning from the run's measurements the rounds after. On a CPU
# that XGB is the packaged pre-fitted one, growing trees on the run's measurements (faster
# builds at 1,024 trials than the hand-off to an XGB from nothing on the held-out networks:
# bench/README.md, *A pre-fitted XGB in the tuner*); no pre-fitted XGB is packaged for a GPU's
# programs, so there the XGB starts from nothing.
DEFAULT_COST_MODELS = {"cpu": "tcl-then-xgb-prior", "cuda": "tcl-then-xgb"}
# The cost model that guides `tcl collect --search` unless told: the base model's first round,
# then an XGB from nothing, on every device alike (the committed search stores were drawn so;
# a store's manifest names its guide).
SEARCH_GUIDE = "tcl-then-xgb"
# The cost models that blend tcl's model with, or hand over to, an XGB learning from the run
# (tcl.integrations.tvm.blend): the ones a first-round model can stand in for.
BLENDED_COST_MODELS = ("tcl+xgb", "tcl-then-xgb", "tcl-then-xgb-prior")
# ... and of those, the ones that hand each task over to the learner after its first programs
HANDED_OVER = ("tcl-then-xgb", "tcl-then-xgb-prior")
# Programs of a task measured before a hand-off gives it to the learner unless ``hand_off`` says
# otherwise: one first round (``tcl.tuning.tune_search.trials_per_round`` gives at least 2 per
# round, usually 8 to 16).
HANDOFF_AT = 4


def default_cost_model(device: str) -> str:
    """The cost model a search of programs that run on ``device`` ("cpu" or "cuda") uses
    unless told (:data:`DEFAULT_COST_MODELS`)."""
    if device not in DEFAULT_COST_MODELS:
        raise ValueError(f"no default cost model for device {device!r}")
    return DEFAULT_COST_MODELS[device]


def check_first_round_model(cost_model: str | None, first_round_model: str | None) -> None:
    """A first-round model is for a blended cost model only (:data:`BLENDED_COST_MODELS`;
    every default is one, so ``cost_model`` None, the device's default, takes one too)."""
    if first_round_model and cost_model is not None and cost_model not in BLENDED_COST_MODELS:
        raise ValueError(
            f"a first-round model is for {', '.join(BLENDED_COST_MODELS)}, not {cost_model!r}"
        )


def check_hand_off(cost_model: str | None, hand_off: int) -> None:
    """A hand-off point is for a cost model that hands each task over (:data:`HANDED_OVER`;
    ``cost_model`` None is the device's default, one of them)."""
    if hand_off and cost_model is not None and cost_model not in HANDED_OVER:
        raise ValueError(f"--hand-off is for {', '.join(HANDED_OVER)}, not {cost_model!r}")


# Programs in each round's evolutionary search of a task (MetaSchedule's population_size; 512 by
# default there): the candidates generated, mutated and scored before the round's picks. A
# round's search costs about as much as its population, whatever the budget (bench/README.md).
DEFAULT_POPULATION = 128
# A quick first round (``first_round``) searches each task with this population
# (``first_round_population``, no wider than the rounds'), and its search draws exactly that many
# random programs (MetaSchedule's ``init_min_unmeasured``, which otherwise draws at least 50): it
# only has to find a few programs worth measuring. 32 instead of 64 brought the first tuned
# network 1-23 s sooner on one core of a Zen 3 (MobileNet-V2 faster than PyTorch eager 12-23 s
# sooner), level by the end of a short budget; 128 took 24-35% longer and landed level
# (bench/README.md, *A quick round of 32 random programs*, *What the quick round is made of*).
FIRST_ROUND_POPULATION = 32
# The evolution steps of that search (MetaSchedule's genetic_num_iters, 4 there). 0 measures the
# cost model's top picks among the search's random initial programs, the
# kind of program the base model learnt from, and skips the mutations that were half the quick
# round's time: its network beat PyTorch eager 1.2-1.8x sooner on BERT-tiny and MobileNet-V2
# and stayed ahead after (bench/README.md, "A quick round without evolution").
FIRST_ROUND_ITERS = 0
# ``first_round_unroll`` as ``tcl tune`` takes it: the quick round's picks may unroll by any step.
ANY_UNROLL = "any"
# Under a time budget the quick round's picks unroll their loops by at most this many steps
# unless ``first_round_unroll`` says otherwise, and the best-scored program past it follows
# right after (tcl.integrations.tvm.build_cost): a quick round's builds are LLVM's time, which
# grows with the unrolling. On one core of a Zen 3 (2-minute budgets, two seeds) the first tuned
# network came 16 s sooner on MobileNet-V2 (58-60 s, faster than PyTorch eager), 38-45 s on
# ResNet-50 and 8 s on BERT-tiny; the builds at the end were 1.02-1.06x slower in three of four
# convolution runs, BERT-tiny's either way (bench/README.md, *A quick round of 32 random
# programs without the costliest builds*). Counted runs with a ``first_round`` take any step.
TIMED_FIRST_ROUND_UNROLL = 64
# Under a time budget (``minutes``) each task's first round is a quick one of this many programs
# unless ``first_round`` says otherwise: a timed run is judged by how fast its network is at the
# end of the budget, and the quick round gives every task a measured program, and the network a
# tuned latency, 3.5-8x sooner, before the rounds go to the tasks that hold the network's time
# (bench/README.md, *A time budget starts with a quick round*). Counted runs keep the first round
# like the others (``first_round`` 0).
TIMED_FIRST_ROUND = 2
# ... and all of those are other tasks' best programs replayed on the task unless
# ``transplants`` says otherwise (tcl.integrations.tvm.transplant; only where a donor of the same
# blocks keeps at least half of its tile decisions, so a task with fewer such transplants keeps
# the model's picks for the places left, and a task with as many runs no quick search). One
# transplant beside the model's pick made the first tuned network 1.13-1.23x faster on
# ResNet-50 and 1.21-1.44x on MobileNet-V2 on a Zen 4 (bench/README.md, *Transplants in the
# quick round*); two in place of it made ResNet-50's quick round end 5-9 s sooner and its
# build after 60 s 1.09-1.27x faster on the Intel Xeon, MobileNet-V2's between 1.11x slower and
# 1.07x faster, BERT-tiny's 1.02x slower (two seeds; *A quick round of transplants alone*).
# ... and where it has some, each task's next this many transplants follow in a round of their
# own unless ``transplant_round`` says otherwise: no search, so they cost only their builds and
# runs, and the task scheduler gives them to the tasks that hold the network's time first. On
# one core of a Zen 4 (2-minute budgets, two seeds) ResNet-50's estimates were 1.18-1.21x lower
# after 90 s and 1.03-1.15x at the end, its builds at the end 1.08x and 1.11x faster in one
# timing and 1.15x slower and level in another; MobileNet-V2 and BERT-tiny level (estimates
# 0.94-1.16x, builds 0.94-1.03x; bench/README.md, *A round of transplants after the quick one*).
TIMED_TRANSPLANT_ROUND = 3
# ... and each task's rounds after its first full one search with this population unless
# ``later_population`` says otherwise: the learner ranks those rounds, and half the population
# halves their search, most of a later round's time on a convolution network. On one core of a
# Zen 4 a run made 1.4-1.6x the later rounds and built MobileNet-V2 1.02-1.08x faster in both
# of two seeds, ResNet-50 level on average over four (1.06x and 1.03x faster, level, 1.05x
# slower at the end; two of those margins follow a first round one arm drew better) and
# BERT-tiny level (bench/README.md, *A narrower search in the learner's rounds*). Counted runs
# keep the rounds' own population.
TIMED_LATER_POPULATION = 64
# ... and each task's full rounds measure this many of the other tasks' best programs so far,
# replayed on it, in place of as many of its search's lowest-scored picks unless ``share_best`` says
# otherwise (tcl.integrations.tvm.siblings): the blocking this host rewards, found on one task,
# reaches the network's other tasks of the same blocks in a measurement, where the packaged donors
# are other networks' programs, mostly of other hosts. On one core of a Zen 4 (3-minute budgets, two
# and three seeds) it built MobileNet-V2 level to 1.15x faster from 90 s on (level before),
# ResNet-50 level (1.05x faster to 1.02x slower between 60 and 180 s) and BERT-tiny level under
# one-minute budgets (bench/README.md, *The run's best programs shared among its tasks*). Counted
# runs share none.
TIMED_SHARE_BEST = 2
# ... and the best program of each task's quick round follows in the round after it rewritten
# to keep a block of its output in vector registers unless ``register_block`` says otherwise
# (tcl.integrations.tvm.register_block; on a CPU): a run's search keeps the blocking of the
# programs it starts from, and another is several decisions away. On one core of a Zen 4
# (3-minute budgets, BERT-tiny 1 minute, two seeds) 15-18 of the 18-23 rewrites of each
# convolution network's runs ran faster than the task's best before them (a median
# 1.14-1.24x); in three timings ResNet-50 built 1.03-1.27x faster within 60 s and 1.02-1.14x
# within 180 s, MobileNet-V2 1.05-1.19x faster within 180 s but for one timing on a disturbed
# host that put one seed 1.18x slower, BERT-tiny 1.08-1.14x faster within 15 s and from 1.05x
# slower to 1.03x faster at 60 s (bench/README.md, *A register-blocked rewrite of each task's
# best quick pick*). Counted runs rewrite none.
TIMED_REGISTER_BLOCK = True
# ... and every task's round after its quick one (its transplants, the program the quick round
# passed over, its best register-blocked: two to four programs and no search) comes before any
# task's full round, the heaviest first; the full rounds then go to the task with the most
# expected gain a second (tcl.integrations.tvm.scheduler, ``per-second``): a gradient is a gain
# a round, and a task's programs cost from a fraction of a second to the 20-s build limit.
# Against the same rounds of transplants followed by MetaSchedule's gradient
# (``transplants-first``), on one core of a Zen 4 (3-minute budgets, BERT-tiny 1 minute, two
# seeds, BERT-tiny four, two timings) it built BERT-tiny 1.02-1.06x faster in one seed, at XGB's
# 1,024-trial build after 14.1 s (26.8x sooner than XGB, where its transplants-first twin did
# not get there within the minute), and within 1.02x either way in three more; MobileNet-V2
# 1.02-1.13x faster within 120 s (level to 1.04x slower within 180 s); ResNet-50
# within 1.03x either way within 60 s, then in one seed 1.00-1.02x faster and in the other
# level to 1.05x slower (bench/README.md, *Rounds weighed by what a task's programs cost*).
# Counted runs, and runs without a quick round, keep MetaSchedule's gradient.
TIMED_TASK_SCHEDULER = "per-second"
# The evolution steps of those later rounds' searches unless ``later_iters`` says otherwise:
# MetaSchedule's genetic_num_iters.
LATER_ROUND_ITERS = 4


@dataclass(frozen=True)
class TuneOptions:
    """How a network is tuned, built and timed.

    ``trials``: programs measured (more on a resumed work directory); ``minutes``: a time budget for
    the search instead (it stops after the round that passes it, whose builds stop there; ``trials``
    then bounds it from above). ``cost_model``: one of :data:`COST_MODELS`, or None for the default
    of the device the target's programs run on (:func:`default_cost_model`; :meth:`on_device` names
    it before the search); ``model_path``: its tcl checkpoint (default: the packaged base model) or
    an MLP state (``.npz``) or a pre-fitted XGB (``.ubj.gz``, ``xgb-prior``);
    ``first_round_model``: the tcl checkpoint that ranks each task's
    first round instead, for :data:`BLENDED_COST_MODELS`; ``hand_off``: how many programs of a
    task a hand-off (``tcl-then-xgb``, ``tcl-then-xgb-prior``) measures before its learner
    ranks the task (0: :data:`HANDOFF_AT`). ``per_round``: the programs of a task each of its
    rounds measures (0: ``tune_search.trials_per_round`` of ``trials``, about four rounds a
    task). ``population``: the programs
    each round's evolutionary search of a task generates, mutates and scores;
    ``later_population``: the population of each task's rounds after its first full one (0:
    ``population``), where the learner, not the pre-trained model, ranks; ``later_iters``: the
    evolution steps of those rounds' searches (MetaSchedule's genetic_num_iters, 4 there);
    ``explore``: how many of a round's picks are drawn at random from its initial population
    instead of by the cost model. ``share_best``: each full round of a task measures up to this
    many of the other tasks' best programs so far, replayed on it, in place of as many of its
    lowest-scored picks (:mod:`tcl.integrations.tvm.siblings`; 0: none). ``register_block``: on
    a CPU, the best program of each task's quick round rewritten to keep a block of its output in
    vector registers leads the round after it (:mod:`tcl.integrations.tvm.register_block`; it
    needs a quick round). ``first_round``: each
    task's first round measures only this many programs, from a search of
    :data:`FIRST_ROUND_POPULATION` (0: the first round like the others), so that every task has
    a measured program, and the network a latency, sooner; ``first_round_population``: that
    search's population, no wider than ``population``: it draws that many random programs a
    task (MetaSchedule's ``init_min_unmeasured``); ``first_round_iters``: its evolution
    steps (0: the cost model's top picks among its random programs); ``first_round_allot``:
    "time" gives each task of the quick round its share of the network's time (weight x
    FLOPs, square-rooted), at least one program and at most ``first_round`` ("even":
    ``first_round`` each, or as ``allot`` shares the rounds); ``first_round_unroll``: the quick
    round's picks by the cost model, and its transplants, are programs that unroll by at most
    this many steps, which build several times faster on a CPU, and the best-scored program it
    passed over is measured right after it (:mod:`tcl.integrations.tvm.build_cost`; None: any);
    ``first_round_repeats``: the quick round times each program in this many repeats of at
    least 10 ms (0: as the rounds after it, 3 of at least 20 ms; two repeats took a quarter
    off the runs of random programs and nothing off a quick round on one core of a Zen 3,
    bench/README.md, *A quick round timed more briefly*); ``first_round_opt_level``: the quick
    round's programs are built at this LLVM level (0-3) to be measured on a CPU, the rounds
    after it at ``candidate_opt_level`` (None: as theirs).
    ``allot``: how a round's picks are shared among the tasks, "even" or by the "time" each holds
    (:mod:`tcl.tuning.allot`). ``task_scheduler``: which task has the next round, "gradient"
    (MetaSchedule's) or "programs" (the same gradient with a task's rounds counted by the
    programs they measured, so that a quick round counts as a fraction of one), or
    "transplants-first" (MetaSchedule's, but every task's round of transplants before any
    task's full round), or "per-second" (every task's round of transplants first, then the
    most expected gain a second: :mod:`tcl.integrations.tvm.scheduler`). ``confident``: after each
    task's first round, a round measures only as many of its best-scored picks as the cost
    model's ranking of the task's last rounds calls for, at least this many
    (:class:`tcl.tuning.allot.Confidence`; 0: every pick).
    ``transplants``: of each task's quick first round, this many are other tasks' best programs
    replayed on it (:mod:`tcl.integrations.tvm.transplant`; at most ``first_round``: as many
    make a task's quick round its transplants alone where it has that many, with no search,
    and fewer leave at least one of the cost model's picks; 0: none), and
    ``transplant_round`` more of them each task measures in a round of their own after its
    quick round (0: none; ``transplant_allot`` "time": each
    task's share of that many a task by the time it holds, as ``allot`` shares rounds;
    "time-exact": the same, but a share grows past that many only with transplants that keep
    every tile decision of their donor), from
    the ``donors`` file (default: the one packaged for the device; none is for a GPU).
    ``post_opt``: the last this many of the trials go to TVM's Droplet post-optimization,
    coordinate descent from each task's best program (:mod:`tcl.integrations.tvm.droplet`; 0:
    none). ``learn_earlier``: a resumed run's cost model first learns the programs the work
    directory's database holds, and a task with some is past its first rounds
    (``search.NewProgramsOnly``; default: the model learns only this run's measurements and
    every task starts with its first rounds, as MetaSchedule resumes).
    ``cold_cache``: each candidate is timed with cold caches. ``repeat_ms``: each of a
    candidate's 3 repeats runs its kernel for at least this many milliseconds (None: the
    collector's protocol, 20). ``candidate_opt_level``: the
    LLVM optimisation level (0-3) the candidates are built at to be measured on a CPU, where
    building is most of a round (None: TVM's, 3); the tuned network is built at TVM's level
    whatever it is (:func:`tcl.integrations.tvm.measure.at_opt_level`). ``exact_math`` keeps
    GELU, erf, exp, tanh and softmax as library calls (default: TVM's fast float32
    approximations);
    ``weight_prepack`` lets each kernel read its weights in the layout its schedule wants;
    ``conv_layout`` ("NCHW", "NHWC", "NCHW16c", "NCHW8c") tunes and builds the 2-D convolutions
    in that data layout (:mod:`tcl.tuning.layout`; "NCHW": as the network was imported; None:
    the platform's, :meth:`on_target`).
    ``rounds``: fresh timing processes per build. ``rpc``: (tracker host, port, device key) of a
    device to measure and time on; ``cc``: the compiler that links the library. ``progress``
    shows a bar on stderr; ``verbose`` also shows MetaSchedule's log and TVM's warnings on the
    terminal.
    """

    trials: int = DEFAULT_TRIALS
    minutes: float | None = None
    cost_model: str | None = None
    model_path: str | None = None
    first_round_model: str | None = None
    hand_off: int = 0
    seed: int = 0
    per_round: int = 0
    population: int = DEFAULT_POPULATION
    later_population: int = 0
    later_iters: int = LATER_ROUND_ITERS
    explore: int = 0
    share_best: int = 0
    register_block: bool = False
    first_round: int = 0
    first_round_population: int = FIRST_ROUND_POPULATION
    first_round_iters: int = FIRST_ROUND_ITERS
    first_round_allot: str = DEFAULT_ALLOT
    first_round_unroll: int | None = None
    first_round_repeats: int = 0
    first_round_opt_level: int | None = None
    allot: str = DEFAULT_ALLOT
    task_scheduler: str = DEFAULT_TASK_SCHEDULER
    confident: int = 0
    transplants: int = 0
    transplant_round: int = 0
    transplant_allot: str = DEFAULT_ALLOT
    donors: str | None = None
    post_opt: int = 0
    learn_earlier: bool = False
    cold_cache: bool = False
    repeat_ms: int | None = None
    candidate_opt_level: int | None = None
    exact_math: bool = False
    weight_prepack: bool = False
    conv_layout: str | None = None
    rounds: int = 5
    rpc: tuple[str, int, str] | None = None
    cc: str | None = None
    progress: bool = True
    verbose: bool = False

    def __post_init__(self) -> None:
        if self.cost_model is not None and self.cost_model not in COST_MODELS:
            raise ValueError(
                f"unknown cost model {self.cost_model!r}: choose one of {', '.join(COST_MODELS)}"
            )
        for name in ("trials", "population", "first_round_population", "rounds"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        check_allot(self.allot)
        check_task_scheduler(self.task_scheduler)
        check_allot(self.first_round_allot)
        check_allot(self.transplant_allot, TRANSPLANT_ALLOTS)
        check_conv_layout(self.conv_layout)
        check_first_round_model(self.cost_model, self.first_round_model)
        check_hand_off(self.cost_model, self.hand_off)
        if self.minutes is not None and not self.minutes > 0:
            raise ValueError(f"minutes must be above 0, got {self.minutes}")
        for name in (
            "explore",
            "share_best",
            "first_round",
            "first_round_iters",
            "confident",
            "transplants",
            "transplant_round",
            "post_opt",
            "later_population",
            "later_iters",
            "hand_off",
            "per_round",
            "first_round_unroll",  # None: no bound
            "first_round_repeats",
        ):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be 0 or more, got {value}")
        if self.repeat_ms is not None and self.repeat_ms < 1:
            raise ValueError(f"repeat_ms must be at least 1, got {self.repeat_ms}")
        if self.repeat_ms is not None and self.cold_cache:
            raise ValueError("repeat_ms sets the warm repeats' length: cold_cache has none")
        for name in ("candidate_opt_level", "first_round_opt_level"):
            level = getattr(self, name)
            if level is not None and level not in range(4):
                raise ValueError(f"{name} is one of LLVM's levels 0-3, got {level}")
        if self.transplants and self.transplants > self.first_round:
            raise ValueError(
                f"transplants ({self.transplants}) take the place of the quick first round's "
                f"picks: ask for a first round of as many (first_round is {self.first_round})"
            )
        if self.first_round_allot != DEFAULT_ALLOT and not self.first_round:
            raise ValueError(
                f"first_round_allot ({self.first_round_allot!r}) shares the quick first round: "
                "ask for one (first_round)"
            )
        if self.first_round_unroll is not None and not self.first_round:
            raise ValueError(
                f"first_round_unroll ({self.first_round_unroll}) bounds the quick first round: "
                "ask for one (first_round)"
            )
        if self.first_round_repeats and not self.first_round:
            raise ValueError(
                f"first_round_repeats ({self.first_round_repeats}) times the quick first round: "
                "ask for one (first_round)"
            )
        if self.first_round_opt_level is not None and not self.first_round:
            raise ValueError(
                f"first_round_opt_level ({self.first_round_opt_level}) builds the quick first "
                "round: ask for one (first_round)"
            )
        if self.register_block and not self.first_round:
            raise ValueError(
                "register_block rewrites the quick first round's best program: ask for one "
                "(first_round)"
            )
        if self.transplant_round and not self.first_round:
            raise ValueError(
                f"transplant_round ({self.transplant_round}) follows the quick first round: ask "
                "for one (first_round)"
            )
        if self.post_opt >= self.trials:
            raise ValueError(
                f"post_opt ({self.post_opt}) must leave the search some of the {self.trials} trials"
            )

    @property
    def narrower_later_rounds(self) -> int | None:
        """The population of each task's rounds after its first full one, where it is not the
        rounds' own (None: ``population`` throughout)."""
        return None if self.later_population in (0, self.population) else self.later_population

    @property
    def transplants_fill_quick_round(self) -> bool:
        """Whether the transplants asked take every place of the quick round: a task with as
        many measures them alone, and the cost model picks only where a task has fewer."""
        return bool(self.transplants) and self.transplants >= self.first_round

    @property
    def own_later_rounds(self) -> bool:
        """Whether each task's rounds after its first full one search otherwise than its first
        (a narrower population or other evolution steps)."""
        return self.narrower_later_rounds is not None or self.later_iters != LATER_ROUND_ITERS

    @classmethod
    def of(cls, trials: int | None = None, **options: Any) -> TuneOptions:
        """The options as ``tcl tune`` and ``tcl.tune`` take them: ``trials`` by default
        :data:`DEFAULT_TRIALS`, or :data:`TIMED_TRIALS` under a time budget (``minutes``), which
        then decides; ``first_round`` by default 0, or :data:`TIMED_FIRST_ROUND` under a time
        budget; ``later_population`` by default 0, or :data:`TIMED_LATER_POPULATION` under a
        time budget; ``transplants`` by default 0, or the whole quick round (``first_round``)
        under a time budget; ``transplant_round`` by default 0, or
        :data:`TIMED_TRANSPLANT_ROUND` under a time budget whose quick round has transplants;
        ``first_round_unroll`` by default None (no bound), or :data:`TIMED_FIRST_ROUND_UNROLL`
        under a time budget with a quick round, and :data:`ANY_UNROLL` as None; ``share_best``
        by default 0, or :data:`TIMED_SHARE_BEST` under a time budget; ``register_block`` by
        default off, or :data:`TIMED_REGISTER_BLOCK` under a time budget with a quick round;
        ``task_scheduler`` by default :data:`~tcl.tuning.allot.DEFAULT_TASK_SCHEDULER`, or
        :data:`TIMED_TASK_SCHEDULER` under a time budget with a quick round."""
        timed = bool(options.get("minutes"))
        if trials is None:
            trials = TIMED_TRIALS if timed else DEFAULT_TRIALS
        if options.get("first_round") is None:
            options["first_round"] = TIMED_FIRST_ROUND if timed else 0
        if options.get("first_round_allot") is None:
            options["first_round_allot"] = DEFAULT_ALLOT
        if options.get("first_round_unroll") is None:
            has_quick_round = timed and options["first_round"] > 0
            options["first_round_unroll"] = TIMED_FIRST_ROUND_UNROLL if has_quick_round else None
        elif options["first_round_unroll"] == ANY_UNROLL:
            options["first_round_unroll"] = None
        if options.get("transplants") is None:
            options["transplants"] = options["first_round"] if timed else 0
        if options.get("transplant_round") is None:
            grafted = timed and options["transplants"] > 0
            options["transplant_round"] = TIMED_TRANSPLANT_ROUND if grafted else 0
        if options.get("later_population") is None:
            options["later_population"] = TIMED_LATER_POPULATION if timed else 0
        if options.get("share_best") is None:
            options["share_best"] = TIMED_SHARE_BEST if timed else 0
        quick = timed and options["first_round"] > 0
        if options.get("register_block") is None:
            options["register_block"] = TIMED_REGISTER_BLOCK and quick
        if options.get("task_scheduler") is None:
            options["task_scheduler"] = TIMED_TASK_SCHEDULER if quick else DEFAULT_TASK_SCHEDULER
        return cls(trials=trials, **options)

    def cost_model_on(self, device: str) -> str:
        """The cost model a search of programs that run on ``device`` uses: the one named, or
        else the device's default."""
        return self.cost_model or default_cost_model(device)

    def on_device(self, device: str) -> TuneOptions:
        """These options for a search of programs that run on ``device``, with the cost model
        named (:meth:`cost_model_on`), so the report says which ran; a GPU's programs are not
        register-blocked (their tiles map to threads)."""
        gpu_blocked = self.register_block and device != "cpu"
        options = replace(self, register_block=False) if gpu_blocked else self
        if options.cost_model is not None:
            return options
        return replace(options, cost_model=options.cost_model_on(device))

    def on_target(self, target: dict[str, Any], *, convolutions: bool = True) -> TuneOptions:
        """These options for a run on ``target`` (a TVM target's JSON dict), with the
        convolution layout named, so the report says which ran: the one asked for, else the
        target's (:func:`tcl.tuning.layout.default_conv_layout`) for a network with
        ``convolutions``, and AS_IMPORTED for one without."""
        if self.conv_layout is not None:
            return self
        layout = default_conv_layout(target) if convolutions else AS_IMPORTED
        return replace(self, conv_layout=layout)

    def saved(self) -> dict[str, Any]:
        """The options as the report keeps them (plain JSON values)."""
        out = asdict(self)
        out["rpc"] = list(self.rpc) if self.rpc else None
        return out

    @classmethod
    def from_saved(cls, saved: dict[str, Any]) -> TuneOptions:
        """The options a report saved (options added later take their defaults; a report
        written before runs named their layout tuned the network as imported)."""
        known = {f.name for f in fields(cls)}
        kept = {k: v for k, v in saved.items() if k in known}
        kept["conv_layout"] = kept.get("conv_layout") or AS_IMPORTED
        if kept.get("rpc"):
            host, port, key = kept["rpc"]
            kept["rpc"] = (str(host), int(port), str(key))
        return cls(**kept)


__all__ = [
    "ANY_UNROLL",
    "BLENDED_COST_MODELS",
    "COST_MODELS",
    "DEFAULT_COST_MODELS",
    "DEFAULT_POPULATION",
    "DEFAULT_TRIALS",
    "DEFAULT_WORK_DIR",
    "FIRST_ROUND_ITERS",
    "FIRST_ROUND_POPULATION",
    "HANDED_OVER",
    "HANDOFF_AT",
    "LATER_ROUND_ITERS",
    "SEARCH_GUIDE",
    "TIMED_FIRST_ROUND",
    "TIMED_FIRST_ROUND_UNROLL",
    "TIMED_LATER_POPULATION",
    "TIMED_REGISTER_BLOCK",
    "TIMED_SHARE_BEST",
    "TIMED_TASK_SCHEDULER",
    "TIMED_TRANSPLANT_ROUND",
    "TIMED_TRIALS",
    "TuneOptions",
    "check_first_round_model",
    "check_hand_off",
    "default_cost_model",
]
