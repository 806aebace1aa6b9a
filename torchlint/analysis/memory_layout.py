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


# The steps whose layout both sides follow: a 2-D transpose, a permutation, a swap or move
# of two dimensions, a narrowed dimension, an expansion
SWAPS = ("transpose", "swapaxes", "swapdims", "movedim", "moveaxis")
STEPS = frozenset({"t", "permute", "narrow", "expand", *SWAPS})

# An argument of a step as each side reads it from its own tree: an integer literal, the
# items of a tuple or list display (integer literals, None for any other item), or None
# for anything else
Argument = int | list[int | None] | None


def step(name: str, base: Layout | None, args: Sequence[Argument]
         ) -> tuple[Layout | None, int] | None:
    """What ``x.<name>(*args)`` (a name of :data:`STEPS`) makes of the layout ``base`` of
    ``x`` (None: not known): ``(layout, 0)``, or ``(None, n)`` when only "at least ``n``
    chunks" is known; None when the step cannot be followed."""
    flat = args[0] if len(args) == 1 and isinstance(args[0], list) else args
    if name == "t":
        if base is not None and not base.open and len(base.dims) == 2:
            return Layout((base.dims[1], base.dims[0]), base.narrowed), 0
        return None, 2
    if name == "permute":
        order = _ints(flat)
        if order is None or sorted(order) != list(range(len(order))):
            return None
        start = base.at_least(len(order)) if base is not None else Layout.contiguous(len(order))
        if start is None or len(start.dims) != len(order):
            return None
        return Layout(tuple(start.dims[i] for i in order), start.narrowed), 0
    if name in SWAPS:
        pair = _ints(args)
        if pair is None or len(pair) != 2:
            return None
        first, second = pair
        if first < 0 or second < 0:
            # transpose(-1, -2) swaps two dimensions of any tensor of rank >= 2
            both = first < 0 and second < 0 and first != second
            return None, 2 if both and name not in ("movedim", "moveaxis") else 1
        start = (base or Layout.contiguous(0, open=True)).at_least(max(first, second) + 1)
        if start is None:
            return None
        dims = list(start.dims)
        if name in ("movedim", "moveaxis"):
            dims.insert(second, dims.pop(first))
        else:
            dims[first], dims[second] = dims[second], dims[first]
        return Layout(tuple(dims), start.narrowed, start.open), 0
    if name == "narrow":
        dim = _ints(args[:1])
        if dim is None or dim[0] < 0:
            return None
        start = (base or Layout.contiguous(0, open=True)).at_least(dim[0] + 1)
        if start is None:
            return None
        origin = start.dims[dim[0]]
        narrowed = start.narrowed | {origin} if origin is not None and dim[0] > 0 else (
            start.narrowed)
        return Layout(start.dims, narrowed, start.open), 0
    if name != "expand" or len(args) == 1 and args[0] is None:
        return None  # (expand(other.size()): any rank)
    kept = len(base.dims) if base is not None and not base.open else None
    dims: list[int | None] = []
    for index, size in enumerate(flat):
        offset = index - (len(flat) - kept) if kept is not None else None
        if size == -1:
            if offset is not None and offset >= 0 and base is not None:
                dims.append(base.dims[offset])
            elif kept is None:
                dims.append(index)  # an unknown receiver: keep its own dimension
            else:
                return None
        else:
            dims.append(None)
    if kept is None:  # the kept dimensions of an unknown receiver walk consecutive ones
        counter = iter(range(len(dims)))
        dims = [None if d is None else next(counter) for d in dims]
    return Layout(tuple(dims), base.narrowed if base is not None else frozenset()), 0


def _ints(args: Sequence[Argument]) -> list[int] | None:
    """The integers ``args`` are; None unless every one is an integer literal."""
    return list(args) if all(type(a) is int for a in args) else None  # type: ignore[arg-type]
