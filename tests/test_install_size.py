"""benchmarks/install_size.py counts what pip installed for torch's stack and nothing else,
run as the docs run it, on folders laid out as pip lays out a site-packages."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmark_process import run_benchmark


def _install(site: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record = [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    for relative, content in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_bytes(content)
        record.append(f"{relative},,{len(content)}")
    (info / "RECORD").write_text("\n".join(record) + "\n")


def _metadata_bytes(site: Path, name: str) -> int:
    return sum(p.stat().st_size for p in site.glob(f"{name.replace('-', '_')}-*.dist-info/*"))


def test_only_torch_and_its_runtime_libraries_count_by_their_record(tmp_path: Path) -> None:
    cuda, cpu = tmp_path / "cuda", tmp_path / "cpu"
    _install(cuda, "torch", "2.0", {"torch/a.so": b"x" * 1000, "torch/b.py": b"y" * 24})
    _install(cuda, "nvidia-cublas", "13.0", {"nvidia/cublas/lib.so": b"z" * 500})
    _install(cuda, "cuda-bindings", "13.0", {"cuda/bindings.so": b"c" * 300})
    _install(cuda, "triton", "3.0", {"triton/t.so": b"t" * 200})
    _install(cuda, "torchvision", "0.1", {"torchvision/v.so": b"v" * 4000})
    _install(cuda, "timm", "1.0", {"timm/big.py": b"w" * 9999})
    (cuda / "torch" / "stray.bin").write_bytes(b"s" * 777)  # not in any RECORD
    _install(cpu, "torch", "2.0+cpu", {"torch/a.so": b"x" * 100})

    done = run_benchmark("install_size.py", "--site", f"CUDA={cuda}", "--site", f"CPU={cpu}")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    assert payload["CUDA"]["distributions"] == {
        "torch 2.0": 1024 + _metadata_bytes(cuda, "torch"),
        "nvidia-cublas 13.0": 500 + _metadata_bytes(cuda, "nvidia-cublas"),
        "cuda-bindings 13.0": 300 + _metadata_bytes(cuda, "cuda-bindings"),
        "triton 3.0": 200 + _metadata_bytes(cuda, "triton"),
    }
    assert payload["CPU"]["distributions"] == {"torch 2.0+cpu": 100 + _metadata_bytes(cpu, "torch")}
    ratio = payload["CUDA"]["total_bytes"] / payload["CPU"]["total_bytes"]
    assert f"takes {ratio:.1f}x the disk of the smallest" in done.stdout


def test_a_folder_without_torch_is_named(tmp_path: Path) -> None:
    _install(tmp_path, "timm", "1.0", {"timm/big.py": b"w" * 10})
    done = run_benchmark("install_size.py", "--site", f"empty={tmp_path}")
    assert done.returncode != 0
    assert f"no torch installation found in {tmp_path}" in done.stderr


def test_a_whole_install_counts_every_distribution_but_the_installer(tmp_path: Path) -> None:
    torch_site, line = tmp_path / "cpu", tmp_path / "line"
    _install(torch_site, "torch", "2.0+cpu", {"torch/a.so": b"x" * 100})
    _install(line, "onnxruntime", "1.0", {"onnxruntime/a.so": b"o" * 300})
    _install(line, "numpy", "2.0", {"numpy/b.so": b"n" * 200})
    _install(line, "pip", "25.0", {"pip/c.py": b"p" * 900})
    done = run_benchmark(
        "install_size.py", "--site", f"CPU={torch_site}", "--install", f"line={line}"
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(payload["line"]["distributions"]) == {"onnxruntime 1.0", "numpy 2.0"}


def test_each_line_install_sets_torch_in_place_of_its_own_runtime(tmp_path: Path) -> None:
    torch_site, onnx, openvino = tmp_path / "cpu", tmp_path / "onnx", tmp_path / "ov"
    _install(torch_site, "torch", "2.0+cpu", {"torch/a.so": b"x" * 5000})
    for site in (onnx, openvino):
        _install(site, "numpy", "2.0", {"numpy/b.so": b"n" * 200})
    _install(onnx, "onnxruntime", "1.0", {"onnxruntime/a.so": b"o" * 300})
    _install(openvino, "openvino", "2026.0", {"openvino/a.so": b"v" * 700})
    _install(openvino, "openvino-telemetry", "2025.0", {"openvino_telemetry/t.py": b"t" * 40})
    done = run_benchmark(
        "install_size.py",
        "--site",
        f"CPU={torch_site}",
        "--install",
        f"onnx line={onnx}",
        "--install",
        f"openvino line={openvino}",
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    torch_stack = payload["CPU"]["total_bytes"]
    for label, runtimes in (
        ("onnx line", ["onnxruntime"]),
        ("openvino line", ["openvino", "openvino-telemetry"]),
    ):
        line = payload[label]
        runtime = sum(
            size for name, size in line["distributions"].items() if name.split()[0] in runtimes
        )
        assert line["runtime_bytes"] == runtime
        base = line["total_bytes"] - runtime
        assert base == sum(
            size for name, size in line["distributions"].items() if name.startswith("numpy")
        )
        assert line["cpu_torch_install_lower_bound_bytes"] == base + torch_stack
        assert line["ratio"] == line["total_bytes"] / (base + torch_stack)
    rows = [row for row in done.stdout.splitlines() if row.startswith("| o")]
    assert [row.split(" | ")[0] for row in rows] == ["| onnx line", "| openvino line"]


def test_a_whole_install_without_a_line_runtime_is_named(tmp_path: Path) -> None:
    torch_site, base = tmp_path / "cpu", tmp_path / "base"
    _install(torch_site, "torch", "2.0+cpu", {"torch/a.so": b"x" * 100})
    _install(base, "numpy", "2.0", {"numpy/b.so": b"n" * 200})
    done = run_benchmark(
        "install_size.py", "--site", f"CPU={torch_site}", "--install", f"base={base}"
    )
    assert done.returncode != 0
    assert f"{base} holds none of the line runtimes" in done.stderr
    done = run_benchmark(
        "install_size.py",
        "--site",
        f"CPU={torch_site}",
        "--install",
        f"base={base}",
        "--runtime",
        "numpy",
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    assert payload["base"]["runtime_bytes"] == payload["base"]["total_bytes"]
