"""Reference-count-free views of arrays inside the kernels.

numba reference-counts every array it binds to a variable or passes to a compiled function,
with an atomic add on the array's memory record. A descent that hands the `Tree` (13 arrays)
to a few per-node functions pays dozens of atomics per simulation: measured, a quarter of a
tabular Gumbel search. `borrow` returns the same arrays without a memory record (as
``numba.carray`` views of foreign memory have none), so those increments become no-ops.

Only for arrays that outlive the kernel call: the caller's Python objects keep the memory
alive, and a borrowed view must never be returned or stored.
"""

from __future__ import annotations

from numba.core import cgutils, types
from numba.extending import intrinsic


def _borrow_array(context, builder, array_type, value):
    source = context.make_array(array_type)(context, builder, value)
    view = context.make_array(array_type)(context, builder)
    view.meminfo = cgutils.get_null_value(view.meminfo.type)
    view.parent = cgutils.get_null_value(view.parent.type)
    view.nitems = source.nitems
    view.itemsize = source.itemsize
    view.data = source.data
    view.shape = source.shape
    view.strides = source.strides
    return view._getvalue()


def _borrow_value(context, builder, value_type, value):
    if isinstance(value_type, types.Array):
        return _borrow_array(context, builder, value_type, value)
    if isinstance(value_type, types.BaseTuple):
        result = value
        for index, field_type in enumerate(value_type):
            field = builder.extract_value(value, index)
            result = builder.insert_value(
                result, _borrow_value(context, builder, field_type, field), index
            )
        return result
    return value


def _borrowable(value_type) -> bool:
    if isinstance(value_type, types.BaseTuple):
        return all(_borrowable(field) for field in value_type)
    return isinstance(value_type, (types.Array, types.Number, types.Boolean))


@intrinsic
def borrow(typingctx, value):
    """``value`` (an array, or a tuple/NamedTuple of arrays and scalars) with every array's
    memory record removed; same type, so callers compile to the same specialisations."""
    if not _borrowable(value):
        return None

    def codegen(context, builder, signature, args):
        return _borrow_value(context, builder, signature.args[0], args[0])

    return value(value), codegen
