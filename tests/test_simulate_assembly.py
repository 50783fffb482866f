"""`simulate` assembles stages that use mate connectors first (SNAP), and the result shows it."""
from pathlib import Path

import numpy as np
import pytest

import usdphys.usd  # noqa: F401  (registers the schemas before any stage exists)
from pxr import Usd, UsdGeom

from usdphys.usd.assemble import assemble
from usdphys.errors import UsdphysError
from usdphys.simulate import simulate

CLOCK = Path(__file__).resolve().parent.parent / "assets" / "snap" / "clock" / "clock.usda"


def _world_translation(stage, path, time=Usd.TimeCode.Default()):
    return np.array(UsdGeom.XformCache(time).GetLocalToWorldTransform(stage.GetPrimAtPath(path)).ExtractTranslation())


def test_clock_is_assembled_before_simulating(tmp_path):
    before = CLOCK.read_bytes()
    reference = Usd.Stage.Open(str(CLOCK))
    # in the session layer: the root layer is shared by every stage that opens the file
    reference.SetEditTarget(Usd.EditTarget(reference.GetSessionLayer()))
    assemble(reference)  # where SNAP puts the parts
    expected = {p: _world_translation(reference, p) for p in ("/Clock/Face", "/Clock/Hand")}

    result = simulate(str(CLOCK), duration=0.2, fps=10)
    assert result.assembly_layer is not None
    out = tmp_path / "clock_sim.usda"
    result.write(out)
    assert CLOCK.read_bytes() == before  # input untouched
    sim = Usd.Stage.Open(str(out))
    for path, want in expected.items():
        i = result.body_paths.index(path)
        # physics:localPos is float32 in UsdPhysics: 1e-7 relative on metre-scale frames
        assert np.allclose(result.positions[0, 0, i], want, atol=1e-6), path
        assert np.allclose(_world_translation(sim, path, Usd.TimeCode(0)), want, atol=1e-6), path


def test_plain_usdphysics_stage_is_not_assembled(tmp_path):
    stage = Usd.Stage.CreateInMemory()
    stage.GetRootLayer().ImportFromString('''#usda 1.0
(
    metersPerUnit = 1
    upAxis = "Z"
)
def Xform "W" {
    def Xform "Box" ( prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"] ) {
        float physics:mass = 1
        float3 physics:diagonalInertia = (1, 1, 1)
    }
}''')
    result = simulate(stage, duration=0.1, fps=10)
    assert result.assembly_layer is None
    # free fall from the authored (identity) pose: z = -g t^2 / 2 at the end
    assert result.positions[-1, 0, 0, 2] < 0


def test_unresolved_mates_stop_simulate_with_the_report():
    """A body SNAP cannot place is never guessed: simulate refuses and shows the report."""
    stage = Usd.Stage.Open(str(CLOCK))
    stage.SetEditTarget(Usd.EditTarget(stage.GetSessionLayer()))  # the file stays untouched
    loose = stage.DefinePrim("/Clock/Loose", "Xform")  # no xformOpOrder and no mate
    loose.ApplyAPI("PhysicsRigidBodyAPI")
    with pytest.raises(UsdphysError) as err:
        simulate(stage, duration=0.1, fps=10)
    assert "SNAP could not place everything" in str(err.value)
    assert "/Clock/Loose" in str(err.value)
