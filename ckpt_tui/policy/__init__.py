"""Keep policies: which checkpoints to keep and which to delete, and why (see `rules`)."""

from ckpt_tui.policy.rules import (
    NO_RULE_REASON,
    Decision,
    KeepPolicy,
    Plan,
    PolicyError,
    RunPlan,
    best_k,
    describe_moment,
    last_m,
    plan,
    recency_key,
)

__all__ = [
    "NO_RULE_REASON",
    "Decision",
    "KeepPolicy",
    "Plan",
    "PolicyError",
    "RunPlan",
    "best_k",
    "describe_moment",
    "last_m",
    "plan",
    "recency_key",
]
