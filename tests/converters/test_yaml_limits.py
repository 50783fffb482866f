"""Hostile YAML is refused fast, in little memory, with one line naming the file, the line,
the limit and what was found (docs/reliability.md). Each case must finish within TIME_S and
allocate at most PEAK_MB (tracemalloc peak) though the unchecked input would take minutes or
gigabytes, or end in a RecursionError."""
from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from usdphys.converters.chrono import convert_file
from usdphys.converters.chrono import yamlio
from usdphys.converters.chrono.yamlio import load
from usdphys.errors import UsdphysError

TIME_S = 5.0  # typically 0.1 s; generous for 2 shared cores
PEAK_MB = 50.0


def _refused(path) -> str:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(UsdphysError) as exc:
            load(path)
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    msg = str(exc.value)
    assert elapsed < TIME_S, f"took {elapsed:.1f} s"
    assert peak < PEAK_MB, f"peak {peak:.0f} MB"
    assert "\n" not in msg and msg.startswith(str(path))
    return msg


def _billion_laughs(levels=9, width=10) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_while_it_is_built(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_billion_laughs())
    msg = _refused(path)
    assert "alias expansion too large" in msg and f"{yamlio.ALIAS_FREE_NODES}" in msg
    assert msg.startswith(f"{path}:1:")  # the anchor being expanded


def test_alias_bomb_used_as_a_mapping_key_is_refused(tmp_path):
    path = tmp_path / "keybomb.yaml"
    path.write_text(_billion_laughs() + "? *a8\n: 1\n")
    assert "alias expansion too large" in _refused(path)


def test_merge_key_bomb_stays_small(tmp_path):
    # each level merges ten copies of the one before: merged keys collapse, so the mapping
    # stays the size of its distinct keys instead of 10**29 pairs
    lines = ["m0: &m0 {a: 1, b: 2}"]
    for i in range(1, 30):
        lines.append(f"m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * 10) + f"], k{i}: {i}}}")
    path = tmp_path / "merge.yaml"
    path.write_text("\n".join(lines) + "\n")
    t0 = time.perf_counter()
    doc = load(path)
    assert time.perf_counter() - t0 < TIME_S
    assert doc.data["m29"]["a"] == 1 and doc.data["m29"]["k1"] == 1 and len(doc.data["m29"]) == 31


def test_merge_keys_keep_yaml_semantics(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text("base: &b {mass: 1, name: x}\nother: &o {mass: 3, color: red}\n"
                    "body: {<<: [*b, *o], mass: 2}\n")
    doc = load(path)
    # written keys override merged ones; in a merge list the first mapping wins
    assert doc.data["body"] == {"name": "x", "color": "red", "mass": 2}


def test_few_aliases_are_fine(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("v: &v [0, 0, 1]\n" + "".join(f"b{i}: *v\n" for i in range(100)))
    assert load(path).data["b99"] == [0, 0, 1]


@pytest.mark.parametrize("levels", [5000, 100_000])
def test_deep_flow_nesting_is_refused(tmp_path, levels):
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * levels + "]" * levels + "\n")
    msg = _refused(path)
    assert f"nesting deeper than {yamlio.MAX_DEPTH} levels" in msg and msg.startswith(f"{path}:1:")


def test_deep_block_nesting_is_refused_at_its_line(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("".join(" " * i + f"k{i}:\n" for i in range(200)) + " " * 200 + "x: 1\n")
    msg = _refused(path)
    assert msg.startswith(f"{path}:{yamlio.MAX_DEPTH}:") and f"limit {yamlio.MAX_DEPTH}" in msg


def test_nesting_at_the_limit_loads(tmp_path):
    path = tmp_path / "ok.yaml"
    depth = yamlio.MAX_DEPTH - 1  # the document mapping is the first level
    path.write_text("a: " + "[" * depth + "]" * depth + "\n")
    load(path)


def test_huge_file_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as f:
        f.truncate(yamlio.MAX_FILE_BYTES + 1)  # sparse: costs no disk
    msg = _refused(path)
    assert "file too large" in msg and f"{yamlio.MAX_FILE_BYTES + 1} bytes" in msg
    assert f"limit {yamlio.MAX_FILE_BYTES}" in msg


def test_too_many_values_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(yamlio, "MAX_NODES", 1000)
    path = tmp_path / "many.yaml"
    path.write_text("v: [" + ", ".join(["0"] * 2000) + "]\n")
    assert "more than 1000 values" in _refused(path)


def test_integer_of_ten_thousand_digits_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "int.yaml"
    path.write_text("model:\n  bodies:\n    - mass: " + "1" * 10_000 + "\n")
    msg = _refused(path)
    assert msg.startswith(f"{path}:3:") and "mass" in msg


def test_converting_a_bomb_writes_nothing_and_leaves_the_input(tmp_path):
    src = tmp_path / "bomb.yaml"
    src.write_text(_billion_laughs())
    before = src.read_bytes()
    out = tmp_path / "out.usda"
    with pytest.raises(UsdphysError):
        convert_file(src, out)
    assert not out.exists() and src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.yaml"]


# ---------------------------------------------------------------------- found by the fuzz test
def test_merge_of_a_non_mapping_is_an_error_with_its_line(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text("model:\n  name: m\n  <<: 1\n")
    with pytest.raises(UsdphysError) as exc:
        load(path)
    assert str(exc.value).startswith(f"{path}:3: model: bad merge key (<<)")


BUSHING = Path(__file__).resolve().parents[2] / "assets" / "chrono-yaml" / "data" / "yaml" / "mbs" / "model_bushing.yaml"


@pytest.mark.parametrize("value, message", [
    ("5.0", "wrong type: expected a list, got number 5.0"),  # a scalar where a vector goes
    ("[.inf, 0, 0]", "must be a finite number, got inf"),
    ("[.nan, 0, 0]", "must be a finite number, got nan"),
    ("[1e400, 0, 0]", "must be a finite number, got inf"),  # overflows to inf
])
def test_bad_body_load_values_are_errors_naming_the_field(tmp_path, value, message):
    text = BUSHING.read_text()
    assert "load: [0, 0, -8e3]" in text
    src = tmp_path / "model_bushing.yaml"
    src.write_text(text.replace("load: [0, 0, -8e3]", f"load: {value}"))
    out = tmp_path / "out.usda"
    with pytest.raises(UsdphysError) as exc:
        convert_file(src, out)
    assert str(exc.value).startswith(f"{src}:68: model.body_loads[0].load") and message in str(exc.value)
    assert not out.exists()


def test_unreadable_text_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("model: {name: caf\xe9}\n".encode("latin-1"))
    with pytest.raises(UsdphysError) as exc:
        load(path)
    assert str(exc.value).startswith(f"{path}: cannot read:")
