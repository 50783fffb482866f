"""Where a step's time goes, by Python source line of the solver's Warp kernels (CPU, Linux perf).

    python benchmarks/profile_step.py fourbar --worlds 256 --steps 4000
    python benchmarks/profile_step.py chain100 --steps 4000 --by function
    python benchmarks/profile_step.py crawlers64 --steps 300 --by function   (bench_many_robots.py's scene)
    python benchmarks/profile_step.py path/to/stage.usda --steps 500   (any stage)

Warp compiles the kernels to machine code in memory, so `perf` sees only anonymous addresses.
This script compiles the step module with line tables (its own flags, step.STEP_CPU_FLAGS,
plus `-debug-info-kind=line-tables-only`: the same machine code), runs the model under
`perf record`, finds where the module was loaded (the address of the frame kernel against its
offset in the object file), and maps every sample to the statement of the generated C++ and
from there, through the `// <L n>` comments Warp writes above each statement, to the Python
line. Percentages are of the samples in the module (the kernels), not of the process.
Needs `perf` and binutils (addr2line, nm); one thread, so the numbers are per world-step.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_model(name: str, worlds: int, steps: int) -> None:
    """Child: simulate, then print the load address of the frame kernel and the object file."""
    import warp as wp

    from usdphys.solver import step as K

    wp.set_module_options({"cpu_compiler_flags": K.STEP_CPU_FLAGS
                           + " -debug-info-kind=line-tables-only -dwarf-version=4"}, module=K)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from chain import chain_model

    from usdphys.solver import Solver
    from usdphys.usd.reader import read_stage

    if name.startswith("chain"):
        model = chain_model(int(name[5:]))
    elif name.startswith("crawlers"):  # bench_many_robots.py's scene, N crawlers in one world
        import mujoco
        from bench_many_robots import mjcf, usdphys_model

        mj = mujoco.MjModel.from_xml_string(mjcf(int(name[8:])))
        md = mujoco.MjData(mj)
        mujoco.mj_forward(mj, md)
        model = usdphys_model(mj, md)
    elif name.endswith((".usd", ".usda", ".usdc")):  # any stage by its path
        model = read_stage(name)[0]
    else:
        model = read_stage(str(ROOT / "assets" / "usd" / f"{name}.usda"))[0]
    if worlds > 1:
        model = model.replicate(worlds)
    Solver(model, "cpu", threads=1).run(1, 10, 1e-3)  # compile and load
    solver = Solver(model, "cpu", threads=1)
    t0 = time.process_time()
    solver.run(10, steps // 10, 1e-3)
    cost = time.process_time() - t0
    print(f"{name} x{worlds}: {1e6 * cost / (worlds * steps):.2f} us CPU per world-step")
    import warp._src.context as ctx

    kernel = K.advance_frames
    for exe in kernel.module.execs.values():
        symbol = kernel.get_mangled_name() + "_cpu_forward"
        address = ctx.runtime.llvm.wp_lookup(exe.handle.encode(), symbol.encode())
        print(f"LOADED {symbol} {address:#x} {exe.binary_path}")


def python_line_of_cpp(cpp: Path) -> list[tuple[str, str]]:
    """For each line of the generated C++: ('file.py:line' of its statement, 'file.py name' of
    its Python function). Warp heads each function with '// /path/file.py:N' (N: the decorator)
    and each statement with '// <source> <L n>'."""
    out, where, current, func = [], "?", "?", "?"
    sources: dict[str, list[str]] = {}
    for text in cpp.read_text().splitlines():
        head = re.match(r"\s*// (/\S+\.py):(\d+)", text)
        if head:
            path, n = head.group(1), int(head.group(2))
            where = Path(path).name
            current = f"{where}:{n}"
            if path not in sources:
                sources[path] = Path(path).read_text().splitlines() if Path(path).exists() else []
            name = next((ln.split("def ", 1)[1].split("(")[0] for ln in sources[path][n - 1:n + 3]
                         if ln.lstrip().startswith("def ")), f"line {n}")
            func = f"{where} {name}"
        stmt = re.search(r"<L (\d+)>\s*$", text)
        if stmt and text.strip().startswith("//"):
            current = f"{where}:{stmt.group(1)}"
        out.append((current, func))
    return out


def analyse(perf_data: str, loaded: str, by: str, top: int) -> None:
    _, symbol, address, obj = loaded.split()
    address = int(address, 16)
    symbols = {}
    for line in subprocess.run(["nm", "-S", obj], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4:
            symbols[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    base = address - symbols[symbol][0]
    end = max(a + s for a, s in symbols.values())
    ips = subprocess.run(["perf", "script", "-i", perf_data, "-F", "ip"], capture_output=True, text=True,
                         check=True).stdout.split()
    hits = collections.Counter(int(ip, 16) - base for ip in ips)
    hits = collections.Counter({o: n for o, n in hits.items() if 0 <= o < end})
    total = sum(hits.values())
    if not total:
        raise SystemExit("no samples in the step module")
    offsets = sorted(hits)
    frames = subprocess.run(["addr2line", "-a", "-i", "-e", obj] + [hex(o) for o in offsets], capture_output=True,
                            text=True, check=True).stdout.splitlines()
    cpp = Path(obj).with_suffix("").with_suffix(".cpp")
    py_of = python_line_of_cpp(cpp)
    chains: dict[int, list[str]] = {}
    k = -1
    for line in frames:
        if line.startswith("0x"):
            k += 1
            chains[offsets[k]] = []
        else:
            chains[offsets[k]].append(line.split(" (")[0])
    counts = collections.Counter()
    for off, chain in chains.items():
        cpp_lines = [int(f.rsplit(":", 1)[1]) for f in chain if ".cpp:" in f and not f.endswith("?")]
        label = "?"
        if cpp_lines:  # the innermost frame: the statement (or function) the instruction is for
            line, func = py_of[cpp_lines[0] - 1]
            label = func if by == "function" else line
        counts[label] += hits[off]
    print(f"{total} samples in the step module; by {by}:")
    for label, n in counts.most_common(top):
        print(f"{100 * n / total:6.2f}%  {label[:110]}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="fourbar, pendulum (assets/usd) or chainN (benchmarks/chain.py)")
    ap.add_argument("--worlds", type=int, default=1)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--by", choices=("line", "function"), default="line")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        run_model(args.model, args.worlds, args.steps)
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        cmd = ["perf", "record", "-q", "-F", "4000", "-o", data, sys.executable, __file__, args.model, "--child",
               "--worlds", str(args.worlds), "--steps", str(args.steps)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit((out.stderr.strip().splitlines() or ["perf record failed"])[-1])
        loaded = [line for line in out.stdout.splitlines() if line.startswith("LOADED ")]
        print("\n".join(line for line in out.stdout.splitlines() if not line.startswith("LOADED ")))
        if not loaded:
            raise SystemExit("the frame kernel was not loaded")
        analyse(data, loaded[0], args.by, args.top)


if __name__ == "__main__":
    main()
