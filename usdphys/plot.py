"""`usdphys plot`: recorded quantities over time, one panel per kind of quantity.

Reads a result layer (the usdphys:out:* and physics:velocity time samples that `simulate
--record` writes) or a table (CSV / Parquet from `--table`), and draws with matplotlib's
object API on the Agg canvas (no display, no pyplot state). Each panel holds one kind of
quantity (angle, force, energy, ...) with its unit on the y axis; each series is named by its
prim (and the quantity and component where a panel holds several of one prim).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from usdphys.errors import UsdphysError

PLOT_EXTENSIONS = (".png", ".svg", ".pdf")
# --what names -> recorded groups (energy = the world group: energies and residuals)
WHAT = {"bodies": "bodies", "joints": "joints", "elements": "elements", "energy": "world", "world": "world"}
DEFAULT_WHAT = ("joints", "elements", "energy")
USD_EXTENSIONS = (".usd", ".usda", ".usdc", ".usdz")


def load_recording(path: str | os.PathLike):
    """(times, channels) of a result layer or a table, by the file's extension."""
    p = Path(path)
    if not p.is_file():
        raise UsdphysError(f"{p}: no such file")
    ext = p.suffix.lower()
    if ext in USD_EXTENSIONS:
        from usdphys.usd.record import read_channels

        return read_channels(p)
    if ext in (".csv", ".parquet"):
        from usdphys.table import channels_from_table, read_table

        return channels_from_table(read_table(p))
    raise UsdphysError(f"{p}: expected a result layer ({', '.join(USD_EXTENSIONS)}) or a table (.csv, .parquet)")


def _matplotlib():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise UsdphysError("usdphys plot needs matplotlib: pip install 'usdphys[plot]'") from None
    return Figure


def parse_what(what) -> list[str]:
    names = [s.strip() for s in (what.split(",") if isinstance(what, str) else what) if s.strip()]
    bad = [n for n in names if n not in WHAT]
    if bad or not names:
        raise UsdphysError(f"--what: unknown '{bad[0] if bad else what}' (expected a comma-separated list of "
                           f"{', '.join(sorted(WHAT))})")
    return names


def make_figure(times, channels, what=DEFAULT_WHAT, title: str = ""):
    """A matplotlib Figure: one panel (Axes) per kind of quantity of the selected groups, one
    line per prim / quantity / component, labelled; the y label is 'quantity [unit]'."""
    Figure = _matplotlib()
    groups = {WHAT[n] for n in parse_what(what)}
    chosen = [c for c in channels if c.group in groups]
    if not chosen:
        have = sorted({c.group for c in channels})
        raise UsdphysError(f"nothing to plot for --what {','.join(parse_what(what))} (recorded: "
                           f"{', '.join(have) or 'nothing'}); simulate with --record")
    panels: dict[tuple[str, str], list] = {}
    for c in chosen:
        panels.setdefault((c.quantity, c.unit), []).append(c)
    # prims named below their common ancestor (said in the title): legends stay readable
    prefix = _common_parent([c.prim for c in chosen])
    fig = Figure(figsize=(12, 2.6 * len(panels) + 0.6), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    t = np.asarray(times, float)
    for ax, ((quantity, unit), chans) in zip(axes, panels.items()):
        several = len({c.name for c in chans}) > 1
        for c in chans:
            v = np.asarray(c.values)[:, 0]
            prim = c.prim[len(prefix):] if prefix else c.prim
            label = f"{prim} {c.name}" if several else prim
            if v.ndim == 2:
                for k, comp in enumerate("xyz"):
                    ax.plot(t[: v.shape[0]], v[:, k], label=f"{label} {comp}")
            else:
                ax.plot(t[: v.shape[0]], v, label=label)
        ax.set_ylabel(f"{quantity} [{unit}]")
        ax.grid(True, alpha=0.3)
        # beside the panel, not over the curves (machines have many joints)
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                  ncol=1 if len(ax.lines) <= 14 else 2)
    axes[-1].set_xlabel("time [s]")
    if prefix:
        title = f"{title}: prims under {prefix.rstrip('/')}" if title else f"prims under {prefix.rstrip('/')}"
    if title:
        fig.suptitle(title)
    return fig


def _common_parent(paths: list[str]) -> str:
    """'/A/B/' when every path lies strictly below /A/B (and that is deeper than the root), else ''."""
    parts = [p.strip("/").split("/") for p in paths]
    common = []
    for names in zip(*parts):
        if len(set(names)) != 1:
            break
        common.append(names[0])
    common = common[: min(len(p) for p in parts) - 1]
    return "/" + "/".join(common) + "/" if common else ""


def plot(result_path, output_path, what=DEFAULT_WHAT):
    """Draw the recorded quantities of a result layer or table into a .png / .svg / .pdf
    (written atomically). Returns the Figure."""
    out = Path(output_path)
    if out.suffix.lower() not in PLOT_EXTENSIONS:
        raise UsdphysError(f"{out}: the picture must end in {', '.join(PLOT_EXTENSIONS)}")
    if not out.parent.resolve().is_dir():
        raise UsdphysError(f"{out}: folder {out.parent} does not exist")
    if Path(result_path).exists() and out.resolve() == Path(result_path).resolve():
        raise UsdphysError(f"{out}: refusing to overwrite the input file; choose another output")
    _matplotlib()
    times, channels = load_recording(result_path)
    fig = make_figure(times, channels, what, title=Path(result_path).name)
    from usdphys.outfile import write_atomic

    write_atomic(out, lambda tmp: fig.savefig(tmp, format=out.suffix.lower()[1:], dpi=120))
    return fig
