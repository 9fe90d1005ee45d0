"""measure's bisection of an order-dependent target: delta debugging over the tests that
flip its outcome, down to the ones it depends on, and the sentence that names them."""

from __future__ import annotations

# An order-dependent target's preceding tests are bisected (delta debugging) to the ones
# that flip it, in at most this many fresh processes (--bisect-max).
BISECT_MAX = 64
# What a bisection names: the tests a target fails only after, or passes only after.
POLLUTER, STATE_SETTER = "polluter", "state_setter"
# The most tests an uploaded cause may name (the board's limit): a bisection stopped
# early with more is printed, not uploaded.
CAUSE_NODES_MAX = 20

def split(nodes, parts):
    """``nodes`` in ``parts`` runs of about equal length, in order."""
    size, extra = divmod(len(nodes), parts)
    chunks, start = [], 0
    for part in range(parts):
        end = start + size + (part < extra)
        chunks.append(nodes[start:end])
        start = end
    return [chunk for chunk in chunks if chunk]


def ddmin(nodes):
    """Delta debugging (Zeller and Hildebrandt's ddmin) over tests that, run before a
    target, flip its outcome. A generator: it yields lists of subsets to try, each kept in
    its order, and is sent for each whether it still flips the target; it returns the
    smallest set it found that does, one test or those needed together. Halving first, one
    test among P takes about log2(P) steps of two runs."""
    parts = 2
    while len(nodes) > 1:
        chunks = split(nodes, parts)
        flips = yield chunks
        if any(flips):
            nodes, parts = chunks[flips.index(True)], 2
            continue
        if parts > 2:
            rests = []
            for chunk in chunks:
                left_out = set(chunk)
                rests.append([node for node in nodes if node not in left_out])
            flips = yield rests
            if any(flips):
                nodes, parts = rests[flips.index(True)], max(parts - 1, 2)
                continue
        if parts >= len(nodes):
            break
        parts = min(len(nodes), 2 * parts)
    return nodes


class Bisection:
    """A target's ddmin, step by step: the subsets of the step under way, the answers in,
    the runs spent against the bound, and the smallest set seen to flip it."""

    def __init__(self, target, limit):
        self.target, self.limit = target, limit
        self.role, nodes, self.seed = target.suspected
        self.smallest, self.runs, self.trying, self.answers = list(nodes), 0, [], {}
        self.steps = ddmin(list(nodes))
        self.lines, self.sentence = [], ""

    def start(self):
        """The first step's subsets, or [] when there is nothing to narrow."""
        return self._step(None)

    def answer(self, index, failed):
        """One subset's run; the next step's subsets once the step is complete."""
        self.answers[index] = failed == (self.role == POLLUTER)
        if len(self.answers) < len(self.trying):
            return []
        flips = [self.answers[i] for i in range(len(self.trying))]
        size = len(self.trying[0])
        if any(flips):
            self.smallest = self.trying[flips.index(True)]
        self.lines.append(f"{len(flips)} run{'s' * (len(flips) != 1)} of about {size} "
                          f"test{'s' * (size != 1)}: "
                          + (f"{sum(flips)} flipped it, {len(self.smallest)} left" if any(flips)
                             else "none flipped it"))
        return self._step(flips)

    def _step(self, flips):
        self.answers = {}
        try:
            batch = next(self.steps) if flips is None else self.steps.send(flips)
        except StopIteration as done:
            self._finish(done.value, complete=True)
            return []
        if self.runs + len(batch) > self.limit:
            self._finish(self.smallest, complete=False)
            return []
        self.runs += len(batch)
        self.trying = batch
        return batch

    def _finish(self, nodes, complete):
        self.target.cause = {"role": self.role, "nodes": list(nodes), "complete": complete}
        self.trying = []
        self.sentence = cause_sentence(self.target.cause, self.limit)
        why = self.target.why
        self.target.why = f"{self.sentence}. {why[0].upper()}{why[1:]}" if why else self.sentence


def cause_sentence(cause, limit):
    """What a bisection found, as the result line and the board say it."""
    nodes, polluter = cause["nodes"], cause["role"] == POLLUTER
    verb = "fails only after" if polluter else "passes only after"
    role = "polluter" if polluter else "state-setter"
    if not cause["complete"]:
        return (f"{verb} some of {len(nodes)} tests ({', '.join(nodes[:3])}"
                f"{', ...' if len(nodes) > 3 else ''}): the bisection stopped at "
                f"--bisect-max {limit} runs")
    if len(nodes) == 1:
        return f"{verb} {nodes[0]} ({role})"
    return f"{verb} {', '.join(nodes[:-1])} and {nodes[-1]} together ({role}s)"
