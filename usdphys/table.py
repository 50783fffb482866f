"""Recorded quantities as a table: CSV always, Parquet when pyarrow is installed.

One row per frame, one column per quantity: 'time [s]' first, then 'prim.name [unit]'
(vectors as three columns .x .y .z), the columns of usdphys.types.recording.table_columns.
Written atomically (temp file + rename). No USD, no Warp.
"""
from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from usdphys.errors import UsdphysError
from usdphys.outfile import check_output_path, write_atomic

TABLE_EXTENSIONS = (".csv", ".parquet")


def check_table_path(path: str | os.PathLike, *inputs) -> Path:
    out = check_output_path(path, *inputs, extensions=TABLE_EXTENSIONS)
    if out.suffix.lower() == ".parquet":
        _pyarrow(out)
    return out


def _pyarrow(path):
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise UsdphysError(f"{path}: writing Parquet needs pyarrow (pip install 'usdphys[table]'); "
                           "or write a .csv table") from None
    return pyarrow


def write_table(path: str | os.PathLike, columns: dict[str, np.ndarray], input_path=None) -> Path:
    """Write ordered columns (name -> (frames,) array) as CSV or Parquet, by the extension."""
    out = check_table_path(path, input_path)
    names = list(columns)
    data = [np.asarray(columns[n], float) for n in names]
    if out.suffix.lower() == ".parquet":
        pa = _pyarrow(out)
        import pyarrow.parquet as pq

        table = pa.table({n: d for n, d in zip(names, data)})
        write_atomic(out, lambda tmp: pq.write_table(table, tmp))
    else:
        def write_csv(tmp):
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(names)
                for row in zip(*data):
                    w.writerow([repr(float(v)) for v in row])  # repr: round-trips every double

        write_atomic(out, write_csv)
    return out


def read_table(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Columns of a table written by write_table (CSV or Parquet)."""
    p = Path(path)
    if not p.is_file():
        raise UsdphysError(f"{p}: no such file")
    if p.suffix.lower() == ".parquet":
        _pyarrow(p)
        import pyarrow.parquet as pq

        try:
            t = pq.read_table(p)
        except Exception as exc:  # pyarrow raises its own types for a bad file
            raise UsdphysError(f"{p}: not a Parquet table ({exc})") from None
        return {n: np.asarray(t.column(n).to_numpy(), float) for n in t.column_names}
    try:
        with open(p, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsdphysError(f"{p}: cannot read: {exc}") from None
    if not rows or not rows[0] or rows[0][0] != "time [s]":
        raise UsdphysError(f"{p}: not a usdphys table (expected a header starting with 'time [s]')")
    names = rows[0]
    try:
        data = np.asarray([[float(v) for v in r] for r in rows[1:] if r], float).reshape(-1, len(names))
    except ValueError as exc:
        raise UsdphysError(f"{p}: line {_bad_line(rows, len(names))}: not a row of {len(names)} numbers ({exc})") from None
    return {n: data[:, i] for i, n in enumerate(names)}


def _bad_line(rows, width) -> int:
    for i, r in enumerate(rows[1:], start=2):
        try:
            if len(r) != width:
                return i
            [float(v) for v in r]
        except ValueError:
            return i
    return len(rows)


def channels_from_table(columns: dict[str, np.ndarray]):
    """(times, [Channel]) from table columns (one world: values (frames, 1[, 3]))."""
    from usdphys.types.recording import Channel, group_of, parse_column

    times = columns.get("time [s]")
    if times is None:
        raise UsdphysError("table has no 'time [s]' column")
    groups: dict[tuple[str, str, str], dict] = {}
    for name, values in columns.items():
        if name == "time [s]":
            continue
        try:
            prim, short, comp, unit = parse_column(name)
        except ValueError as exc:
            raise UsdphysError(f"table column {name!r}: {exc}") from None
        groups.setdefault((prim, short, unit), {})[comp] = values
    out = []
    for (prim, short, unit), parts in groups.items():
        if None in parts:
            vals = np.asarray(parts[None]).reshape(-1, 1)
        else:
            vals = np.stack([parts[c] for c in ("x", "y", "z")], axis=-1).reshape(-1, 1, 3)
        out.append(Channel(prim, short, group_of(short, vals.ndim == 3), quantity_of(short, unit), unit, vals))
    return np.asarray(times, float), out


_QUANTITY_BY_UNIT = {"m": "length", "deg": "angle", "m/s": "velocity", "deg/s": "angular velocity", "N": "force",
                     "N m": "torque", "J": "energy", "1": "limit active", "m or rad": "constraint residual"}


def quantity_of(name: str, unit: str) -> str:
    """The plot panel of a column read back from a table (the table keeps only the unit)."""
    return _QUANTITY_BY_UNIT.get(unit, unit)
