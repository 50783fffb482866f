"""usdphys render: what the picture shows is where the simulation put the bodies.

A pendulum with a red bob (authored displayColor) is simulated, written, and drawn; the red
pixels' centroid in each panel must sit where the frame's simulated bob centre projects with
the picture's own camera. Skipped without the `render` extra (CI installs it)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from sim_helpers import body, joint, stage  # noqa: E402

from usdphys.cli import main  # noqa: E402
from usdphys.drawing import render  # noqa: E402
from usdphys.errors import UsdphysError  # noqa: E402
from usdphys.simulate import simulate  # noqa: E402

L, R = 0.5, 0.06  # link length, bob radius (m)
SIZE = (200, 160)
# Centroid of the red mask vs the projected centre, in pixels. The bob's silhouette is a
# 24-gon symmetric about its centre and anti-aliasing blurs its edge by under a pixel on every
# side alike; thresholding then shifts the centroid by well under a pixel (0.5 px here leaves
# room for the lit/shaded sides of the disc thresholding slightly differently).
CENTROID_TOL_PX = 0.5


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    """(Result, result layer path) of a pendulum simulated once for every test here."""
    tmp_path = tmp_path_factory.mktemp("render")
    bob = f'''def Sphere "bob" {{
        double radius = {R}
        color3f[] primvars:displayColor = [(1, 0, 0)]
    }}
    def Cylinder "rod" {{
        double radius = 0.01
        double height = {L}
        uniform token axis = "X"
        double3 xformOp:translate = ({-L / 2}, 0, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }}'''
    text = body("bob", pos=(L, 0, 0), mass=1.0, inertia=(1e-4, 1e-4, 1e-4), extra=bob)
    text += joint("PhysicsRevoluteJoint", "pivot", "bob", pos0=(0, 0, 0), pos1=(-L, 0, 0), axis="Y")
    src = tmp_path / "pendulum.usda"
    st = stage(text, gravity=9.81)
    st.GetRootLayer().Export(str(src))
    res = simulate(str(src), duration=0.4, dt=1e-3, fps=30)
    out = tmp_path / "pendulum_sim.usda"
    res.write(out)
    return res, out


def _red_centroid(img: np.ndarray) -> np.ndarray:
    rgb = img[..., :3].astype(float) / (255.0 if img.dtype == np.uint8 else 1.0)
    mask = (rgb[..., 0] > 0.3) & (rgb[..., 1] < 0.15) & (rgb[..., 2] < 0.15)
    ys, xs = np.nonzero(mask)
    assert len(xs) > 50, "the bob is not in the picture"
    # pixel (i, j) covers [j, j + 1) x [i, i + 1): its centre is at + 0.5
    return np.array([xs.mean() + 0.5, ys.mean() + 0.5])


def test_strip_shows_the_bob_where_it_was_simulated(tmp_path, pendulum):
    from matplotlib.image import imread

    res, result = pendulum
    png = tmp_path / "motion.png"
    frames = [0, 6, 12]
    out, cam, scene = render(result, png, frames=frames, size=SIZE)
    img = imread(str(out))
    w, h = SIZE
    assert img.shape[:2] == (h, w * len(frames))
    seen = []
    for slot, f in enumerate(frames):
        panel = img[:, slot * w:(slot + 1) * w]
        got = _red_centroid(panel)
        want = cam.project(res.positions[f, 0, 0])
        assert np.linalg.norm(got - want) < CENTROID_TOL_PX, (f, got, want)
        seen.append(got)
    # the bob really moved between the frames (so the check above can fail)
    assert np.linalg.norm(seen[2] - seen[0]) > 20.0


def test_gif_has_one_image_per_frame_and_the_bob_moves(tmp_path, pendulum):
    from PIL import Image

    res, result = pendulum
    out, cam, _ = render(result, tmp_path / "motion.gif", frames="0:12:6", size=SIZE)
    with Image.open(out) as im:
        assert im.n_frames == 3
        im.seek(2)
        got = _red_centroid(np.asarray(im.convert("RGB")))
    # GIF palettes quantise the shading: allow one pixel
    assert np.linalg.norm(got - cam.project(res.positions[12, 0, 0])) < 1.0


def test_cli_render_and_one_line_errors(tmp_path, pendulum, capsys):
    _, result = pendulum
    png = tmp_path / "cli.png"
    assert main(["render", str(result), "-o", str(png), "--frames", "0,12", "--size", "64x48"]) == 0
    assert png.stat().st_size > 0
    capsys.readouterr()
    for args, needle in ((["-o", str(tmp_path / "x.jpg")], "expected .png, .gif, .mp4"),
                         (["-o", str(png), "--frames", "0,999"], "frame 999 is outside"),
                         (["-o", str(png), "--size", "big"], "WIDTHxHEIGHT"),
                         (["-o", str(png), "--frames", "a:b"], "--frames"),
                         (["-o", str(png), "--frames", "0:12", "--size", "4000x20"], "wider than")):
        assert main(["render", str(result), *args]) == 1
        err = capsys.readouterr().err.strip()
        assert needle in err and "\n" not in err and "Traceback" not in err


def test_missing_extra_is_one_line(tmp_path, pendulum, monkeypatch):
    _, result = pendulum
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(UsdphysError, match=r"pip install 'usdphys\[render\]'"):
        render(result, tmp_path / "m.png")
    assert not (tmp_path / "m.png").exists()


def test_mp4_without_an_encoder_is_one_line(tmp_path, pendulum, monkeypatch):
    from matplotlib import animation

    _, result = pendulum
    monkeypatch.setattr(animation.writers, "is_available", lambda name: False)
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    with pytest.raises(UsdphysError, match=r"\.mp4 needs an ffmpeg encoder") as info:
        render(result, tmp_path / "m.mp4", frames="0,6")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "m.mp4").exists()


@pytest.mark.parametrize("up", [1, 2])
def test_camera_axes_are_a_right_handed_frame_with_up_on_screen(up):
    from usdphys.drawing import view_axes

    for az, el in ((0, 0), (25, 20), (-90, 60), (10, 90)):
        right, upv, toward = view_axes(up, az, el)
        frame = np.stack([right, upv, toward])
        np.testing.assert_allclose(frame @ frame.T, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(np.cross(right, upv), toward, atol=1e-12)
        if el < 90:  # the stage's up axis points up the picture, never down
            assert upv[up] > 0
