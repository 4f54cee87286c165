"""The pace's rules round by round, and answer by answer while it grows fast, on a clock the
test moves (the servers' side is in tests/client/test_client_pacing.py)."""

from __future__ import annotations

from contextlib import AsyncExitStack

from ckpt_tui.client.pacing import Pace

FIRST = 8
"""The limit these rounds start from (lower than the default start, to watch it grow)."""


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def take(pace: Pace, count: int) -> list[AsyncExitStack]:
    """`count` slots taken now, each to be answered 204 when its stack closes."""
    stacks = [AsyncExitStack() for _ in range(count)]
    for stack in stacks:
        slot = await stack.enter_async_context(pace.slot())
        slot.answered(204)
    return stacks


async def answer(stacks: list[AsyncExitStack]) -> None:
    for stack in stacks:
        await stack.aclose()


async def one_round(pace: Pace, clock: Ticks, seconds: float) -> None:
    """As many requests as the limit, sent together, all answered `seconds` later."""
    sent = await take(pace, pace.limit)
    clock.now += seconds
    await answer(sent)


def batching(in_flight: int) -> float:
    """A server whose answers take longer the more come at once, but that gets more done per
    second with more: 80 ms at 8 in flight, 8 ms more per request beyond."""
    return 0.08 + 0.008 * (in_flight - FIRST)


async def test_slower_answers_that_get_more_done_keep_the_limit() -> None:
    clock = Ticks()
    pace = Pace(32, clock=clock, limit=FIRST)
    for _ in range(20):
        await one_round(pace, clock, batching(pace.limit))
    assert [why for _, why in pace.history] == ["latency holds", "latency holds"]
    assert pace.limit == 32  # 272 ms at 32 is past twice the fastest (80 ms) plus 50 ms


async def test_slower_answers_that_get_less_done_lose_a_quarter() -> None:
    clock = Ticks()
    pace = Pace(32, clock=clock, limit=FIRST)
    for _ in range(3):  # 8, 16, then 32 in flight at 80 ms: latency holds
        await one_round(pace, clock, 0.08)
    await one_round(pace, clock, 0.8)  # then ten times slower: a tenth the rate
    assert pace.history[-1] == (24, "slower")


async def test_after_a_slow_round_the_limit_grows_by_a_quarter_a_round() -> None:
    """A noisy first round (a cold start) ended the doubling; one more slot a round then
    took 26 rounds from 6 to 32, longer than the rest of a 1,000-delete prune."""
    clock = Ticks()
    pace = Pace(128, clock=clock, limit=FIRST)
    await one_round(pace, clock, 0.08)  # the fastest answer: 80 ms
    await one_round(pace, clock, 0.8)  # one slow round, the rate down to a tenth
    assert pace.history[-1] == (12, "slower")
    rounds = 0
    while pace.limit < 64:
        await one_round(pace, clock, 0.08)
        rounds += 1
    assert [limit for limit, _ in pace.history[2:5]] == [15, 18, 22]
    assert rounds == 9  # one slot a round: 52


async def test_while_growing_fast_each_answer_that_holds_adds_a_slot_at_once() -> None:
    """Slow start, as TCP's: the first answers of a round free their slots and add one each,
    rather than leaving the limit as it was until the round's last answer."""
    clock = Ticks()
    pace = Pace(128, clock=clock, limit=FIRST)
    sent = await take(pace, FIRST)
    clock.now += 0.08
    await answer(sent[:1])  # one answer of eight
    assert (pace.limit, pace.in_flight) == (FIRST + 1, FIRST - 1)
    assert pace.history == []  # the round goes on
    await answer(sent[1:])
    assert pace.history == [(2 * FIRST, "latency holds")]
    assert pace.limit == 2 * FIRST


async def test_a_slower_answer_ends_the_growth_and_the_round_is_judged_where_it_got() -> None:
    """Once an answer comes slower, the round's later answers add no slot however fast
    they come (more in flight would only queue), and the round is judged at the limit it
    reached, the number in flight its answers came with."""
    clock = Ticks()
    pace = Pace(128, clock=clock, limit=FIRST)
    await one_round(pace, clock, 0.08)  # 8 at 80 ms: 100 a second
    assert pace.limit == 16
    sent = await take(pace, 16)
    clock.now += 0.08
    await answer(sent[:4])
    assert pace.limit == 20  # each of the 4 that held added one
    clock.now += 0.72
    await answer(sent[4:5])  # 800 ms: slower than twice 80 ms plus 50
    later = await take(pace, 4)
    clock.now += 0.08
    await answer(later)  # 80 ms, as fast as the first, and none adds a slot now
    assert pace.limit == 20
    assert pace.history == [(16, "latency holds")]  # the round goes on
    await answer(sent[5:12])  # its 16th answer ends it: median (80 + 880) / 2 ms
    # 16 answers in 0.88 s, under 80% of the 100 a second before: a quarter off the 20
    # the round reached, not off the 16 it started at
    assert pace.history[-1] == (15, "slower")
    await answer(sent[12:])
