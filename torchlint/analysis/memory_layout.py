"""Memory layouts as plain values (no syntax tree): for each dimension of a tensor, the
dimension of a contiguous base tensor it walks in memory (None: a broadcast dimension of
stride 0), plus the base dimensions that ``narrow`` shortened. TL501's analysis
(``rules/tensors/layouts.py``, over libcst nodes) and its screening check (over ``ast``
nodes) both compute these and ask them the same questions.

Two neighbouring dimensions can be merged by a view when they walk consecutive base
dimensions in order (and the second one was not narrowed), or when both are broadcast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    """Each dimension's base dimension (None: broadcast), the base dimensions that were
    narrowed, and whether more trailing dimensions may follow (rank not known, only its
    least value)."""

    dims: tuple[int | None, ...]
    narrowed: frozenset[int] = frozenset()
    open: bool = False

    @classmethod
    def contiguous(cls, rank: int, *, open: bool = False) -> Layout:
        return cls(tuple(range(rank)), frozenset(), open)

    def at_least(self, rank: int) -> Layout | None:
        """This layout with at least ``rank`` dimensions (extends an open one)."""
        if len(self.dims) >= rank:
            return self
        if not self.open or any(d is None for d in self.dims):
            return None
        return Layout(tuple(range(rank)), self.narrowed, True) if self.dims == tuple(
            range(len(self.dims))) else None

    def chunks(self) -> int:
        """How many runs of mergeable dimensions the layout has (a lower bound when open:
        more trailing dimensions never join runs)."""
        count = 1 if self.dims else 0
        for left, right in zip(self.dims, self.dims[1:]):
            if not mergeable(left, right, self.narrowed):
                count += 1
        return count


def mergeable(left: int | None, right: int | None, narrowed: frozenset[int]) -> bool:
    """Can a view merge two neighbouring dimensions walking base dimensions ``left`` and
    ``right``?"""
    if left is None or right is None:
        return left is None and right is None
    return right == left + 1 and right not in narrowed


def view_groups(arguments: Sequence[set[str] | None], rest: int | None,
                order: Sequence[str]) -> list[tuple[int, int]] | None:
    """The run of permuted dimensions (start, stop) each argument of a view covers.

    ``arguments``: the size names each argument multiplies (``{"w", "c"}`` for ``w * c``;
    None when it is no product of distinct names); ``rest``: the position of the one ``-1``
    argument, which takes what is left (None: there is none); ``order``: the size names of
    the permuted dimensions. None when the arguments do not line up with ``order``.
    """
    split = rest if rest is not None else len(arguments)
    groups: list[tuple[int, int]] = []
    position = 0
    for factors in arguments[:split]:
        if factors is None:
            return None
        stop = position + len(factors)
        if stop > len(order) or set(order[position:stop]) != factors:
            return None
        groups.append((position, stop))
        position = stop
    end = len(order)
    tail: list[tuple[int, int]] = []
    for factors in reversed(arguments[split + 1:]):
        if factors is None:
            return None
        start = end - len(factors)
        if start < position or set(order[start:end]) != factors:
            return None
        tail.insert(0, (start, end))
        end = start
    if rest is not None:
        if end <= position:
            return None
        groups.append((position, end))
    elif end != position:
        return None
    return groups + tail
