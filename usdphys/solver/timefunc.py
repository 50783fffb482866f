"""Time functions u(t) evaluated in Warp (float64, callable from any kernel).

The packed table and its layout are in usdphys.types.timefunc.

    eval_time_function(t, fn, kinds, params, data) -> u
    eval_time_function_dt(t, fn, kinds, params, data) -> du/dt
    eval_time_function_both(t, fn, kinds, params, data) -> (u, du/dt)
    piecewise_linear(x, data, offset, count) -> (y, dy/dx)      (also used by the force laws)

with kinds: wp.array2d(dtype=wp.int32), params: wp.array2d(dtype=wp.float64),
data: wp.array(dtype=wp.float64), fn: int32 row index.
"""
from __future__ import annotations

import numpy as np
import warp as wp

from usdphys.types import timefunc as table
from usdphys.types.enums import TimeFunctionKind
from usdphys.types.timefunc import PackedTimeFunctions

wp.set_module_options({"enable_backward": False})

# Warp constants derived from the table's kinds and columns
K_CONSTANT = wp.constant(int(TimeFunctionKind.CONSTANT))
K_POLYNOMIAL = wp.constant(int(TimeFunctionKind.POLYNOMIAL))
K_SINE = wp.constant(int(TimeFunctionKind.SINE))
K_RAMP = wp.constant(int(TimeFunctionKind.RAMP))
K_DATA = wp.constant(int(TimeFunctionKind.DATA))
K_STEP = wp.constant(int(TimeFunctionKind.STEP))
C_KIND = wp.constant(table.COL_KIND)
C_OFFSET = wp.constant(table.COL_OFFSET)
C_COUNT = wp.constant(table.COL_COUNT)
C_REPEAT = wp.constant(table.COL_REPEAT)
C_START = wp.constant(table.COL_START)
C_WIDTH = wp.constant(table.COL_WIDTH)
C_SHIFT = wp.constant(table.COL_SHIFT)
C_SCALE = wp.constant(table.COL_SCALE)


def time_functions_to_warp(packed: PackedTimeFunctions, device=None):
    """(kinds, params, data) as Warp arrays for eval_time_function."""
    return (
        wp.array(packed.kinds, dtype=wp.int32, device=device),
        wp.array(packed.params, dtype=wp.float64, device=device),
        wp.array(packed.data, dtype=wp.float64, device=device),
    )


# ----------------------------------------------------------------------------------------
# Warp
# ----------------------------------------------------------------------------------------
@wp.func
def piecewise_linear(x: wp.float64, data: wp.array(dtype=wp.float64), offset: wp.int32, count: wp.int32):
    """(y, dy/dx) through (x_i, y_i) interleaved at data[offset:], held constant outside;
    slope of [x_i, x_{i+1}) (0 outside, right-continuous). count = 0 gives (0, 0)."""
    zero = wp.float64(0.0)
    if count <= 0:
        return zero, zero
    x0 = data[offset]
    if count == 1 or x < x0:
        return data[offset + 1], zero
    last = offset + 2 * (count - 1)
    if x >= data[last]:
        return data[last + 1], zero
    # binary search: largest i in [0, count-2] with x_i <= x
    lo = wp.int32(0)
    hi = count - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if data[offset + 2 * mid] <= x:
            lo = mid
        else:
            hi = mid
    xa = data[offset + 2 * lo]
    ya = data[offset + 2 * lo + 1]
    xb = data[offset + 2 * lo + 2]
    yb = data[offset + 2 * lo + 3]
    s = (yb - ya) / (xb - xa)
    return ya + s * (x - xa), s


@wp.func
def _step_value(x: wp.float64, data: wp.array(dtype=wp.float64), offset: wp.int32, count: wp.int32):
    # held interpolation: value of the last point at or before x (first point before it)
    v = data[offset + 1]
    for i in range(count):
        if data[offset + 2 * i] <= x:
            v = data[offset + 2 * i + 1]
    return v


@wp.func
def eval_time_function_both(
    t: wp.float64,
    fn: wp.int32,
    kinds: wp.array2d(dtype=wp.int32),
    params: wp.array2d(dtype=wp.float64),
    data: wp.array(dtype=wp.float64),
):
    """(u(t), du/dt) of row fn of the packed table."""
    zero = wp.float64(0.0)
    kind = kinds[fn, C_KIND]
    offset = kinds[fn, C_OFFSET]
    count = kinds[fn, C_COUNT]
    tau = t
    if kinds[fn, C_REPEAT] != 0:
        tau = params[fn, C_START] + wp.mod(t + params[fn, C_SHIFT], params[fn, C_WIDTH])
    u = zero
    du = zero
    if kind == K_CONSTANT:
        u = params[fn, 0]
    elif kind == K_POLYNOMIAL:
        # Horner for value and derivative
        for j in range(count):
            c = data[offset + count - 1 - j]
            du = du * tau + u
            u = u * tau + c
    elif kind == K_SINE:
        arg = params[fn, 1] * tau + params[fn, 2]
        u = params[fn, 0] * wp.sin(arg) + params[fn, 3]
        du = params[fn, 0] * params[fn, 1] * wp.cos(arg)
    elif kind == K_RAMP:
        u = params[fn, 0] + params[fn, 1] * tau
        du = params[fn, 1]
    elif kind == K_DATA:
        u, du = piecewise_linear(tau, data, offset, count)
    elif kind == K_STEP:
        u = _step_value(tau, data, offset, count)
    scale = params[fn, C_SCALE]
    return scale * u, scale * du


@wp.func
def eval_time_function(
    t: wp.float64,
    fn: wp.int32,
    kinds: wp.array2d(dtype=wp.int32),
    params: wp.array2d(dtype=wp.float64),
    data: wp.array(dtype=wp.float64),
):
    """u(t) of row fn of the packed table."""
    u, du = eval_time_function_both(t, fn, kinds, params, data)
    return u


@wp.func
def eval_time_function_dt(
    t: wp.float64,
    fn: wp.int32,
    kinds: wp.array2d(dtype=wp.int32),
    params: wp.array2d(dtype=wp.float64),
    data: wp.array(dtype=wp.float64),
):
    """du/dt of row fn of the packed table."""
    u, du = eval_time_function_both(t, fn, kinds, params, data)
    return du


@wp.kernel
def time_function_kernel(
    ts: wp.array(dtype=wp.float64),
    fns: wp.array(dtype=wp.int32),
    kinds: wp.array2d(dtype=wp.int32),
    params: wp.array2d(dtype=wp.float64),
    data: wp.array(dtype=wp.float64),
    out_u: wp.array(dtype=wp.float64),
    out_du: wp.array(dtype=wp.float64),
):
    """Batch evaluation: out[i] = u_{fns[i]}(ts[i])."""
    i = wp.tid()
    u, du = eval_time_function_both(ts[i], fns[i], kinds, params, data)
    out_u[i] = u
    out_du[i] = du


def evaluate_packed_warp(packed: PackedTimeFunctions, fns, ts, device="cpu") -> tuple[np.ndarray, np.ndarray]:
    """Evaluate (u, du/dt) with the Warp kernel at paired (fns[i], ts[i]); NumPy in/out."""
    ts = np.asarray(ts, dtype=np.float64).reshape(-1)
    fns = np.broadcast_to(np.asarray(fns, dtype=np.int32), ts.shape).copy()
    kinds, params, data = time_functions_to_warp(packed, device)
    out_u = wp.zeros(ts.shape[0], dtype=wp.float64, device=device)
    out_du = wp.zeros(ts.shape[0], dtype=wp.float64, device=device)
    wp.launch(
        time_function_kernel, dim=ts.shape[0],
        inputs=[wp.array(ts, dtype=wp.float64, device=device), wp.array(fns, dtype=wp.int32, device=device), kinds, params, data],
        outputs=[out_u, out_du], device=device,
    )
    return out_u.numpy(), out_du.numpy()
