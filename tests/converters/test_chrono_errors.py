"""Bad Chrono input: exit 1 with file:LINE: field: message, and no output file."""
from __future__ import annotations

import textwrap

import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from usdphys.cli import main
from usdphys.converters.chrono import convert
from usdphys.errors import UsdphysError

HEAD = "chrono-version: 10.0\nmodel:\n  name: M\n"
GOOD_BODIES = """\
  bodies:
    - name: ground
      location: [0, 0, 0]
      fixed: true
    - name: b
      location: [1, 0, 0]
      mass: 1
      inertia:
        moments: [1, 1, 1]
"""


def write(tmp_path, text: str, name="model.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def error_of(path) -> str:
    with pytest.raises(UsdphysError) as exc:
        convert(path)
    return str(exc.value)


# (test id, YAML text after HEAD, expected line, expected substrings)
CASES = [
    ("syntax", GOOD_BODIES + "  joints: [\n", 14, ["YAML syntax error"]),
    ("missing-bodies", "  joints: []\n", 2, ["model.bodies", "missing required field"]),
    ("missing-location", "  bodies:\n    - name: a\n      fixed: true\n", 5, ["model.bodies[0].location", "missing required field"]),
    ("wrong-type", "  bodies:\n    - name: a\n      location: [0, 0, x]\n      fixed: true\n", 6,
     ["model.bodies[0].location[2]", "expected a number", "string 'x'"]),
    ("wrong-length", "  bodies:\n    - name: a\n      location: [0, 0]\n      fixed: true\n", 6,
     ["model.bodies[0].location", "expected 3 items, got 2"]),
    ("unknown-enum", GOOD_BODIES + "  joints:\n    - name: j\n      type: HINGE\n      body1: ground\n      body2: b\n"
     "      location: [0, 0, 0]\n", 15, ["model.joints[0].type", "unknown value 'HINGE'", "REVOLUTE"]),
    ("missing-body", GOOD_BODIES + "  joints:\n    - name: j\n      type: LOCK\n      body1: ground\n      body2: nobody\n"
     "      location: [0, 0, 0]\n", 17, ["model.joints[0].body2", "no body named 'nobody'"]),
    ("zero-mass", "  bodies:\n    - name: a\n      location: [0, 0, 0]\n      mass: 0\n      inertia: {moments: [1, 1, 1]}\n",
     7, ["model.bodies[0].mass", "must be > 0"]),
    ("no-mass", "  bodies:\n    - name: a\n      location: [0, 0, 0]\n      inertia: {moments: [1, 1, 1]}\n",
     5, ["model.bodies[0].mass", "missing required field"]),
    ("negative-inertia", "  bodies:\n    - name: a\n      location: [0, 0, 0]\n      mass: 1\n      inertia: {moments: [1, -1, 1]}\n",
     8, ["model.bodies[0].inertia.moments", "must be > 0"]),
    ("indefinite-inertia", "  bodies:\n    - name: a\n      location: [0, 0, 0]\n      mass: 1\n"
     "      inertia: {moments: [1, 1, 1], products: [2, 0, 0]}\n", 8, ["products", "not positive definite"]),
    ("duplicate-body", GOOD_BODIES + "    - name: b\n      location: [0, 0, 0]\n      fixed: true\n", 13,
     ["model.bodies[2].name", "duplicate name 'b'", "line 8"]),
    ("duplicate-key", "  bodies:\n    - name: a\n      location: [0, 0, 0]\n      location: [1, 0, 0]\n      fixed: true\n",
     7, ["model.bodies[0].location", "duplicate key"]),
    ("missing-material", "  bodies:\n    - name: a\n      location: [0, 0, 0]\n      fixed: true\n      contact:\n"
     "        materials:\n          - name: steel\n        shapes:\n          - type: SPHERE\n            material: rubber\n"
     "            radius: 1\n            location: [0, 0, 0]\n", 13, ["contact.shapes[0].material", "'rubber'"]),
    ("missing-mesh", "  bodies:\n    - name: a\n      location: [0, 0, 0]\n      fixed: true\n      visualization:\n"
     "        shapes:\n          - type: MESH\n            filename: /nonexistent/x.obj\n", 11,
     ["visualization.shapes[0].filename", "file not found: /nonexistent/x.obj"]),
    ("revolute-no-axis", GOOD_BODIES + "  joints:\n    - name: j\n      type: REVOLUTE\n      body1: ground\n      body2: b\n"
     "      location: [0, 0, 0]\n", 14, ["model.joints[0].axis", "missing required field"]),
    ("prismatic-bushing", GOOD_BODIES + "  joints:\n    - name: j\n      type: PRISMATIC\n      body1: ground\n      body2: b\n"
     "      location: [0, 0, 0]\n      axis: [1, 0, 0]\n      bushing_data: {stiffness_linear: 1, damping_linear: 1,"
     " stiffness_rotational: 1, damping_rotational: 1}\n", 20, ["bushing_data", "not allowed on a PRISMATIC"]),
    ("tsda-no-law", GOOD_BODIES + "  tsdas:\n    - name: s\n      body1: ground\n      body2: b\n      point1: [0, 0, 0]\n"
     "      point2: [1, 0, 0]\n", 14, ["model.tsdas[0]", "needs spring_coefficient"]),
    ("function-missing-field", GOOD_BODIES + "  motors:\n    - name: m\n      type: ROTATION\n      body1: b\n      body2: ground\n"
     "      location: [0, 0, 0]\n      axis: [0, 0, 1]\n      actuation_type: SPEED\n      actuation_function:\n"
     "        type: SINE\n        amplitude: 1\n", 21, ["actuation_function.frequency", "missing required field"]),
    ("bool-as-number", "  bodies:\n    - name: a\n      location: [0, 0, 0]\n      mass: true\n      inertia: {moments: [1, 1, 1]}\n",
     7, ["model.bodies[0].mass", "expected a number, got boolean true"]),
]


@pytest.mark.parametrize("case,body,line,parts", CASES, ids=[c[0] for c in CASES])
def test_error_names_file_line_field(tmp_path, case, body, line, parts):
    path = write(tmp_path, HEAD + body)
    msg = error_of(path)
    assert msg.startswith(f"{path}:{line}:"), msg
    for part in parts:
        assert part in msg, msg


def test_cli_exit_1_and_no_output(tmp_path, capsys):
    path = write(tmp_path, HEAD + "  bodies:\n    - name: a\n      location: [0, 0, 0]\n      mass: -2\n"
                                  "      inertia: {moments: [1, 1, 1]}\n")
    out = tmp_path / "out.usda"
    assert main(["convert", str(path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:7: model.bodies[0].mass: must be > 0" in err
    assert "Traceback" not in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model.yaml"]  # no temp file left behind


def test_cli_refuses_to_overwrite_input_and_bad_extension(tmp_path, capsys):
    path = write(tmp_path, HEAD + GOOD_BODIES)
    assert main(["convert", str(path), "-o", str(tmp_path / "out.txt")]) == 1
    assert "output must end in" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "missing.yaml"), "-o", str(tmp_path / "o.usda")]) == 1
    assert "file not found" in capsys.readouterr().err


def test_unknown_keys_warn_with_line(tmp_path):
    path = write(tmp_path, HEAD + GOOD_BODIES + "      lin_vel: [1, 0, 0]\n      colour: [1, 0, 0]\n")
    warnings: list[str] = []
    convert(path, warnings)
    assert any(f"{path}:13: model.bodies[1].lin_vel" in w and "initial_linear_velocity" in w for w in warnings)
    assert any(f"{path}:14: model.bodies[1].colour: unknown key" in w for w in warnings)


def test_missing_solver_or_model_file_named(tmp_path):
    write(tmp_path, HEAD + GOOD_BODIES)
    sim = write(tmp_path, "chrono-version: 10.0\ntype: MBS\nmodel: model.yaml\nsolver: nope.yaml\n", "sim.yaml")
    msg = error_of(sim)
    assert msg.startswith(f"{sim}:4: solver: file not found") and "nope.yaml" in msg


def test_several_errors_reported_together(tmp_path):
    path = write(tmp_path, HEAD + "  bodies:\n    - name: a\n      location: [0, 0]\n      fixed: maybe\n")
    msg = error_of(path)
    assert f"{path}:6: model.bodies[0].location" in msg and f"{path}:7: model.bodies[0].fixed" in msg
