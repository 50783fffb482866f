"""Pictures of a result without usdview: a strip of frames (PNG) or an animation (GIF, MP4).

    from usdphys.drawing import render
    render("out/pendulum_sim.usda", "motion.png", frames=[0, 30, 60], size=(320, 240))

Drawn with matplotlib's Agg backend (software only: no display, no GPU, no OpenGL), the
optional extra ``usdphys[render]``. The shapes are triangulated (usdphys.types.scene) and
painted far to near with flat Lambert shading under an ORTHOGRAPHIC camera: the picture's
geometry is exactly ``Camera.project`` of the world points, which is what the tests check.

Camera: looks along the horizontal axis in which the motion spreads least (a planar mechanism
is seen face on), turned by VIEW_AZIMUTH about the stage's up axis and raised by
VIEW_ELEVATION so depth stays visible, or along an explicit ``view=(azimuth, elevation)`` in
degrees (azimuth 0 looks along the first horizontal axis: +X for Z-up, +Z for Y-up). The view
is framed on the bounding box of the moving geometry over the chosen frames (static geometry,
e.g. a ground plane, is drawn but not framed), the same for every frame.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from usdphys.errors import UsdphysError

FORMATS = (".png", ".gif", ".mp4")
DEFAULT_SIZE = (480, 360)
STRIP_FRAMES = 6  # frames in a PNG strip when none are chosen
MAX_PIXELS = 8192  # per side of one frame: larger is a typo, not a picture
MAX_STRIP_PIXELS = 32768  # width of a whole strip (Agg draws at most 65536 pixels a side)
VIEW_AZIMUTH = 25.0  # degrees off the face-on view
VIEW_ELEVATION = 20.0
MARGIN = 0.08  # of the framed extent on every side
REFINE_EDGES = 24  # triangles are split to edges under 1/24 of the framed width (painter's sort)
REFINE_DEPTH = 10
AMBIENT, DIFFUSE = 0.35, 0.65
DPI = 100
MISSING_EXTRA = "usdphys render needs matplotlib: pip install 'usdphys[render]'"


@dataclass
class Camera:
    """Orthographic camera: screen x = p . right, screen y = p . up, depth = p . toward
    (toward points from the scene to the eye; larger is nearer). Pixels of one frame:
    x from the left, y from the top, (0, 0) the top-left corner."""

    right: np.ndarray
    up: np.ndarray
    toward: np.ndarray
    extent: tuple[float, float, float, float]  # xmin, xmax, ymin, ymax (stage units)
    size: tuple[int, int]  # width, height in pixels

    def screen(self, points) -> np.ndarray:
        p = np.asarray(points, float)
        return np.stack([p @ self.right, p @ self.up], -1)

    def project(self, points) -> np.ndarray:
        """World points (stage units) -> pixel coordinates in one frame of the picture."""
        s = self.screen(points)
        xmin, xmax, ymin, ymax = self.extent
        w, h = self.size
        return np.stack([(s[..., 0] - xmin) / (xmax - xmin) * w, (ymax - s[..., 1]) / (ymax - ymin) * h], -1)


def view_axes(up_axis: int, azimuth_deg: float, elevation_deg: float):
    """(right, up, toward) unit vectors for a view direction given about the up axis."""
    u = np.eye(3)[up_axis]
    h1, h2 = np.eye(3)[(up_axis + 1) % 3], np.eye(3)[(up_axis + 2) % 3]
    az, el = np.radians(azimuth_deg), np.radians(elevation_deg)
    toward = np.cos(el) * (np.cos(az) * h1 + np.sin(az) * h2) + np.sin(el) * u
    right = np.cross(u, toward)
    n = np.linalg.norm(right)
    if n < 1e-9:  # looking straight down or up: keep the first horizontal axis to the right
        right = np.cross(h2, toward) if elevation_deg > 0 else np.cross(toward, h2)
        n = np.linalg.norm(right)
    right = right / n
    return right, np.cross(toward, right), toward


def frame_camera(scene, size=DEFAULT_SIZE, view=None) -> Camera:
    """The camera of a picture: view from the motion (or `view`), framed on the moving geometry."""
    ids = [m for m, mesh in enumerate(scene.meshes) if mesh.moving] or list(range(len(scene.meshes)))
    pts = np.concatenate([scene.world_vertices(f, m) for f in range(len(scene.time_codes)) for m in ids])
    if view is None:
        h1, h2 = (scene.up_axis + 1) % 3, (scene.up_axis + 2) % 3
        spread = np.ptp(pts, axis=0)
        # face on: look along the horizontal axis of least spread (azimuth 0 looks along h1)
        base = 0.0 if spread[h1] <= spread[h2] else -90.0
        view = (base + VIEW_AZIMUTH, VIEW_ELEVATION)
    right, up, toward = view_axes(scene.up_axis, float(view[0]), float(view[1]))
    s = np.stack([pts @ right, pts @ up], -1)
    lo, hi = s.min(0), s.max(0)
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo) * (1.0 + 2.0 * MARGIN)
    half = np.maximum(half, 1e-6 * max(1.0, float(np.max(np.abs(pts)))))
    w, h = size
    if half[0] / half[1] < w / h:  # widen to the picture's aspect ratio
        half[0] = half[1] * w / h
    else:
        half[1] = half[0] * h / w
    return Camera(right, up, toward, (centre[0] - half[0], centre[0] + half[0], centre[1] - half[1],
                                      centre[1] + half[1]), (int(w), int(h)))


def refine(scene, max_edge: float, max_depth: int = REFINE_DEPTH) -> None:
    """Bisect every triangle's longest edge (measured in the world at the first frame) until
    no edge is longer than max_edge: the painter's sort is by triangle centre, and a long
    triangle (the side of a thin rod) would otherwise be painted over a sphere it pokes into.
    max_depth bounds the triangles one may become (2 ** max_depth), e.g. a huge ground plane."""
    for m, mesh in enumerate(scene.meshes):
        lin = scene.transforms[0, m, :3, :3]
        tri = mesh.vertices[mesh.faces]  # (T, 3, 3), local
        for _ in range(max_depth):
            edges = np.stack([tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 1], tri[:, 0] - tri[:, 2]], 1)
            length = np.linalg.norm(edges @ lin.T, axis=2)  # (T, 3)
            longest = np.argmax(length, axis=1)
            split = length[np.arange(len(tri)), longest] > max_edge
            if not np.any(split):
                break
            t, k = tri[split], longest[split]
            a = t[np.arange(len(t)), k]
            b = t[np.arange(len(t)), (k + 1) % 3]
            c = t[np.arange(len(t)), (k + 2) % 3]
            mid = 0.5 * (a + b)
            tri = np.concatenate([tri[~split], np.stack([a, mid, c], 1), np.stack([mid, b, c], 1)])
        mesh.vertices = tri.reshape(-1, 3)
        mesh.faces = np.arange(len(mesh.vertices)).reshape(-1, 3)


def _triangles(scene, cam: Camera, frame: int):
    """Screen polygons and colours of every triangle at `frame`, far to near."""
    light = cam.toward + 0.5 * cam.up + 0.3 * cam.right
    light = light / np.linalg.norm(light)
    polys, colors, depths = [], [], []
    for m, mesh in enumerate(scene.meshes):
        if len(mesh.faces) == 0:
            continue
        tri = scene.world_vertices(frame, m)[mesh.faces]  # (T, 3, 3)
        n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        norm = np.linalg.norm(n, axis=1)
        ok = norm > 0.0
        tri, n = tri[ok], n[ok] / norm[ok, None]
        shade = AMBIENT + DIFFUSE * np.abs(n @ light)
        colors.append(np.clip(mesh.color[None, :] * shade[:, None], 0.0, 1.0))
        polys.append(cam.screen(tri))
        depths.append((tri @ cam.toward).mean(1))
    if not polys:
        return np.zeros((0, 3, 2)), np.zeros((0, 3))
    polys, colors, depths = np.concatenate(polys), np.concatenate(colors), np.concatenate(depths)
    order = np.argsort(depths, kind="stable")
    return polys[order], colors[order]


def draw_frame(fig, scene, cam: Camera, frame: int, slot: int = 0, slots: int = 1, label: bool = True):
    """Draw frame `frame` of the scene into panel `slot` of `slots` side by side in `fig`."""
    from matplotlib.collections import PolyCollection

    ax = fig.add_axes((slot / slots, 0.0, 1.0 / slots, 1.0))
    ax.set_axis_off()
    xmin, xmax, ymin, ymax = cam.extent
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(ymin, ymax)
    polys, colors = _triangles(scene, cam, frame)
    ax.add_collection(PolyCollection(polys, facecolors=colors, edgecolors=colors, linewidths=0.3))
    if label:
        ax.text(0.03, 0.97, f"t = {scene.times[frame]:.3f} s", transform=ax.transAxes, ha="left", va="top",
                fontsize=9, color="0.2")
    if slot > 0:
        ax.axvline(xmin, color="0.75", linewidth=1.0)
    return ax


def parse_frames(spec, codes: np.ndarray) -> list[float]:
    """'0,30,60' or 'start:stop[:step]' (stop included when on the step) -> time codes."""
    if spec is None:
        return None
    if not isinstance(spec, str):
        return [float(f) for f in spec]
    text = spec.strip()
    try:
        if ":" in text:
            parts = [p.strip() for p in text.split(":")]
            if len(parts) > 3:
                raise ValueError
            start = float(parts[0]) if parts[0] else float(codes[0])
            stop = float(parts[1]) if len(parts) > 1 and parts[1] else float(codes[-1])
            step = float(parts[2]) if len(parts) > 2 and parts[2] else 1.0
            if step <= 0 or stop < start:
                raise ValueError
            return list(np.arange(start, stop + 0.5 * step, step))
        return [float(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise UsdphysError(f"--frames {spec!r}: expected frame numbers '0,30,60' or a range 'start:stop[:step]'") from None


def _default_frames(codes: np.ndarray, animated: bool) -> list[float]:
    if animated or len(codes) <= STRIP_FRAMES:
        return list(codes)
    return list(codes[np.round(np.linspace(0, len(codes) - 1, STRIP_FRAMES)).astype(int)])


def _check_size(size) -> tuple[int, int]:
    if isinstance(size, str):
        try:
            w, h = (int(v) for v in size.lower().split("x"))
        except ValueError:
            raise UsdphysError(f"--size {size!r}: expected WIDTHxHEIGHT in pixels, e.g. 480x360") from None
    else:
        w, h = (int(v) for v in size)
    if not (16 <= w <= MAX_PIXELS and 16 <= h <= MAX_PIXELS):
        raise UsdphysError(f"size {w}x{h}: each side must be 16..{MAX_PIXELS} pixels")
    return w, h


def _mp4_writer(path: Path):
    from matplotlib import animation, rcParams

    if not animation.writers.is_available("ffmpeg"):
        try:
            import imageio_ffmpeg

            rcParams["animation.ffmpeg_path"] = imageio_ffmpeg.get_ffmpeg_exe()
        except Exception:  # not installed, or no binary for this platform
            pass
    if not animation.writers.is_available("ffmpeg"):
        raise UsdphysError(f"{path}: writing .mp4 needs an ffmpeg encoder (on PATH, or pip install imageio-ffmpeg); "
                           "write a .gif instead")
    return animation.FFMpegWriter


def render(result, output, frames=None, size=DEFAULT_SIZE, geometry: str = "auto", view=None,
           fps: float | None = None):
    """Draw a result (path to a result layer, or a Usd.Stage) at `frames` into `output`.

    output: .png (a strip of the frames side by side), .gif or .mp4 (one frame after the
    other, at real time unless `fps` is given). frames: time codes (a list, '0,30,60' or
    'start:stop[:step]'); default 6 evenly spaced for a strip, all for an animation.
    size: (width, height) or 'WxH' of one frame in pixels. geometry: auto | visual |
    collision (usdphys.usd.scene). view: (azimuth, elevation) in degrees, see the module.
    Returns (output path, Camera, the RenderScene).
    """
    out = Path(output)
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        raise UsdphysError(f"{out}: unknown picture format '{out.suffix}'; expected {', '.join(FORMATS)}")
    w, h = _check_size(size)
    if suffix == ".mp4" and (w % 2 or h % 2):
        raise UsdphysError(f"size {w}x{h}: an .mp4 needs an even width and height")
    if view is not None:
        try:
            view = tuple(float(v) for v in (view.split(",") if isinstance(view, str) else view))
        except ValueError:
            view = ()
        if len(view) != 2 or not all(np.isfinite(view)):
            raise UsdphysError("view: expected AZIMUTH,ELEVATION in degrees, e.g. 30,20")
    if fps is not None and not (np.isfinite(fps) and fps > 0):
        raise UsdphysError(f"fps must be a positive number, got {fps!r}")
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UsdphysError(MISSING_EXTRA) from None
    del matplotlib
    from usdphys.usd.scene import frame_codes, read_render_scene
    from usdphys.usd.stage import check_output_path, open_stage, write_atomic

    if isinstance(result, (str, os.PathLike)):
        check_output_path(out, result, extensions=FORMATS)
        stage = open_stage(result)
    else:
        check_output_path(out, extensions=FORMATS)
        stage = result
    writer_cls = _mp4_writer(out) if suffix == ".mp4" else None
    animated = suffix != ".png"
    codes = frame_codes(stage)
    chosen = parse_frames(frames, codes)
    scene = read_render_scene(stage, chosen if chosen is not None else _default_frames(codes, animated), geometry)
    if isinstance(result, (str, os.PathLike)):
        scene.source = os.fspath(result)
    if not animated and len(scene.time_codes) * w > MAX_STRIP_PIXELS:
        raise UsdphysError(f"{out}: a strip of {len(scene.time_codes)} frames of {w} pixels is wider than {MAX_STRIP_PIXELS}; "
                           "choose fewer --frames, a smaller --size, or write a .gif")
    cam = frame_camera(scene, (w, h), view)
    refine(scene, (cam.extent[1] - cam.extent[0]) / REFINE_EDGES)
    n = len(scene.time_codes)

    if not animated:
        fig = Figure(figsize=(w * n / DPI, h / DPI), dpi=DPI, facecolor="white")
        FigureCanvasAgg(fig)
        for i in range(n):
            draw_frame(fig, scene, cam, i, i, n)
        write_atomic(out, lambda tmp: fig.savefig(tmp, dpi=DPI, format="png", facecolor="white"))
        return out, cam, scene

    from matplotlib import animation

    if fps is None:
        steps = np.diff(scene.times)
        fps = 1.0 / float(np.median(steps)) if n > 1 and np.all(steps > 0) else 10.0
        fps = float(np.clip(fps, 1.0, 50.0))  # GIF delays are whole hundredths of a second
    fig = Figure(figsize=(w / DPI, h / DPI), dpi=DPI, facecolor="white")
    FigureCanvasAgg(fig)
    writer = writer_cls(fps=fps) if writer_cls else animation.PillowWriter(fps=fps)

    def write(tmp):
        try:
            with writer.saving(fig, tmp, DPI):
                for i in range(n):
                    fig.clear()
                    draw_frame(fig, scene, cam, i)
                    writer.grab_frame(facecolor="white")
        except subprocess.CalledProcessError as exc:
            raise UsdphysError(f"{out}: the encoder failed (exit status {exc.returncode})") from None
        return True

    write_atomic(out, write)
    return out, cam, scene
