"""What the demo holds: runs, their checkpoints and their training logs, as plain data.

The plan is computed from a seed and "now" alone, so the same seed at the same time gives the
same demo; `builder.py` turns it into a store and log dirs.
"""

from __future__ import annotations

import math
import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
PERIODIC_TTL = 7 * DAY  # the cookbook's checkpoint manager keeps periodic saves a week
ROLLING_TTL = 2 * HOUR


@dataclass
class PlannedCheckpoint:
    """One save: a training state and/or sampler weights, and the record that names them."""

    name: str
    step: int
    epoch: int
    created: datetime
    expires_at: datetime | None
    kinds: tuple[str, ...]  # "state", "sampler"
    eval_loss: float | None = None
    final: bool = False
    rolling: bool = False
    public_sampler: bool = False
    on_server: bool = True  # False: deleted since (the log dir still names it)
    in_log: bool = True


@dataclass
class PlannedRun:
    """A training run on the server, and the log dir that knows it (if any)."""

    run_id: str
    log_name: str | None
    base_model: str
    lora_rank: int | None
    created: datetime
    checkpoints: list[PlannedCheckpoint] = field(default_factory=list)
    losses: list[tuple[int, float]] = field(default_factory=list)
    user_metadata: dict[str, str] = field(default_factory=dict)

    @property
    def is_lora(self) -> bool:
        return self.lora_rank is not None


def run_id_for(rng: random.Random) -> str:
    """A Tinker-style run id: a UUID with the trainer suffix the service uses."""
    return f"{uuid.UUID(int=rng.getrandbits(128), version=4)}:train:0"


def loss_curve(rng: random.Random, steps: int, start: float, end: float) -> list[tuple[int, float]]:
    """A noisy decaying training loss, one point every 5 steps."""
    points = []
    for step in range(0, steps + 1, 5):
        base = end + (start - end) * math.exp(-4.0 * step / max(steps, 1))
        points.append((step, round(base * (1 + rng.uniform(-0.04, 0.04)), 4)))
    return points


def eval_loss_at(losses: list[tuple[int, float]], step: int, rng: random.Random) -> float:
    nearest = min(losses, key=lambda point: abs(point[0] - step))[1]
    return round(nearest * 1.06 + rng.uniform(0, 0.02), 4)


def periodic(
    run: PlannedRun, rng: random.Random, every: int, last: int, step_time: timedelta
) -> None:
    """Saves every `every` steps with the periodic TTL, both kinds, like the cookbook does."""
    for step in range(every, last + 1, every):
        created = run.created + step_time * step
        run.checkpoints.append(
            PlannedCheckpoint(
                name=f"{step:06d}",
                step=step,
                epoch=step // 500,
                created=created,
                expires_at=created + PERIODIC_TTL,
                kinds=("state", "sampler"),
                eval_loss=eval_loss_at(run.losses, step, rng),
            )
        )


def add_final(run: PlannedRun, rng: random.Random, step: int, step_time: timedelta) -> None:
    run.checkpoints.append(
        PlannedCheckpoint(
            name="final",
            step=step,
            epoch=step // 500,
            created=run.created + step_time * step,
            expires_at=None,
            kinds=("state", "sampler"),
            eval_loss=eval_loss_at(run.losses, step, rng),
            final=True,
        )
    )


def sft_llama(rng: random.Random, now: datetime) -> PlannedRun:
    """Finished SFT: periodic saves (the oldest expire within hours) and a final with no TTL."""
    run = PlannedRun(
        run_id_for(rng), "sl/llama-8b-tulu3", "meta-llama/Llama-3.1-8B", 32, now - 6.97 * DAY
    )
    run.losses = loss_curve(rng, 1000, 2.1, 0.92)
    step_time = timedelta(minutes=3)
    periodic(run, rng, 100, 900, step_time)
    add_final(run, rng, 1000, step_time)
    return run


def rl_qwen(rng: random.Random, now: datetime) -> PlannedRun:
    """RL in progress: periodic saves plus rolling resume-only states, older rollings deleted."""
    run = PlannedRun(run_id_for(rng), "rl/qwen3-8b-math", "Qwen/Qwen3-8B", 16, now - 2.5 * DAY)
    run.losses = loss_curve(rng, 260, 0.85, 0.41)
    step_time = (now - run.created - 5 * timedelta(minutes=1)) / 260
    periodic(run, rng, 50, 250, step_time)
    for step in range(210, 261, 10):
        created = run.created + step_time * step
        run.checkpoints.append(
            PlannedCheckpoint(
                name=f"rolling_{step:06d}",
                step=step,
                epoch=0,
                created=created,
                expires_at=created + ROLLING_TTL,
                kinds=("state",),
                rolling=True,
                on_server=step == 260,  # each rolling save deletes the one before it
            )
        )
    run.checkpoints.sort(key=lambda ckpt: ckpt.created)
    return run


def chat_qwen(rng: random.Random, now: datetime) -> PlannedRun:
    """A published model: early saves deleted by hand, the final sampler public."""
    run = PlannedRun(
        run_id_for(rng), "sl/qwen3-4b-chat", "Qwen/Qwen3-4B-Instruct-2507", 64, now - 12 * DAY
    )
    run.user_metadata = {"owner_note": "shipped to eval team"}
    run.losses = loss_curve(rng, 600, 1.8, 0.77)
    step_time = timedelta(minutes=9)
    for step in (200, 400):
        created = run.created + step_time * step
        run.checkpoints.append(
            PlannedCheckpoint(
                f"{step:06d}",
                step,
                0,
                created,
                created + PERIODIC_TTL,
                ("state", "sampler"),
                eval_loss_at(run.losses, step, rng),
                on_server=False,
            )
        )
    add_final(run, rng, 600, step_time)
    run.checkpoints[-1].public_sampler = True
    return run


def sweep_llama(rng: random.Random, now: datetime) -> PlannedRun:
    """A small sweep run: one save already past its TTL (the server has removed it)."""
    run = PlannedRun(
        run_id_for(rng), "sl/llama-1b-sweep/lr-3e-4", "meta-llama/Llama-3.2-1B", 8, now - 8.5 * DAY
    )
    run.losses = loss_curve(rng, 400, 2.6, 1.35)
    step_time = timedelta(minutes=20)
    periodic(run, rng, 100, 400, step_time)
    run.checkpoints[0].on_server = False  # created 7.1 days ago with a 7-day TTL: expired
    return run


def full_finetune(rng: random.Random, now: datetime) -> PlannedRun:
    """A full fine-tune: no LoRA, so each save holds the whole model (tens of GiB)."""
    run = PlannedRun(
        run_id_for(rng), "full/llama-3b-ft", "meta-llama/Llama-3.2-3B", None, now - 4 * DAY
    )
    run.losses = loss_curve(rng, 300, 1.9, 1.05)
    step_time = timedelta(minutes=12)
    periodic(run, rng, 150, 300, step_time)
    add_final(run, rng, 300, step_time)
    return run


def untracked_run(rng: random.Random, now: datetime) -> PlannedRun:
    """A run made from a notebook: on the server, in no log dir."""
    run = PlannedRun(run_id_for(rng), None, "meta-llama/Llama-3.1-70B", 8, now - 1.2 * DAY)
    run.user_metadata = {"source": "notebook"}
    for index, hours in enumerate((20, 26)):
        created = run.created + HOUR * hours
        run.checkpoints.append(
            PlannedCheckpoint(
                f"probe-{index + 1}", 0, 0, created, created + 3 * DAY, ("sampler",), in_log=False
            )
        )
    return run


def plan_demo(seed: int, now: datetime) -> list[PlannedRun]:
    """The whole demo for one seed, with times relative to `now`."""
    rng = random.Random(seed)
    makers = (sft_llama, rl_qwen, chat_qwen, sweep_llama, full_finetune, untracked_run)
    return [make(rng, now) for make in makers]
