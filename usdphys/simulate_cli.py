"""`usdphys simulate INPUT -o OUTPUT`: simulate a stage, write body motion as a new layer."""
from __future__ import annotations

from usdphys.errors import UsdphysError

HELP = "simulate a UsdPhysics stage and write body motion as time samples in a new layer"


def add_arguments(parser) -> None:
    parser.add_argument("input", help="USD stage to simulate (never modified)")
    parser.add_argument("-o", "--output", required=True, help="result layer (.usda/.usdc/.usd); sublayers INPUT")
    parser.add_argument("--duration", type=float, default=None,
                        help="simulated seconds (default: mbd:endTime on the PhysicsScene, else 5)")
    parser.add_argument("--dt", type=float, default=None,
                        help="largest time step in seconds; rounded down to divide 1/fps "
                             "(default: mbd:timeStep on the PhysicsScene, else 0.001)")
    parser.add_argument("--fps", type=float, default=None, help="output frames per second (default 60)")
    parser.add_argument("--device", default=None, help="Warp device: cpu or cuda (default: Warp's default)")
    parser.add_argument("--worlds", type=int, default=1,
                        help="simulate N copies at once (benchmarking); world 0 is written")


def run(args) -> int:
    from usdphys.usd.stage import check_output_path
    from usdphys.simulate import simulate

    check_output_path(args.output, args.input)  # fail before minutes of simulation
    if args.device not in (None, "cpu") and not str(args.device).startswith("cuda"):
        raise UsdphysError(f"--device {args.device}: expected cpu or cuda")
    result = simulate(args.input, duration=args.duration, dt=args.dt, fps=args.fps, device=args.device,
                      worlds=args.worlds, progress=True)
    out = result.write(args.output)
    print(f"wrote {out}: {len(result.body_paths)} bodies, {len(result.times)} frames at {result.fps:g} fps "
          f"(dt = {result.dt:.6g} s)")
    return 0
