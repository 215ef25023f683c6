"""benchmarks/install_size.py counts what pip installed for torch's stack and nothing else."""

from pathlib import Path

from benchmarks.install_size import is_torch_stack, stack_sizes


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


def test_only_torch_and_its_runtime_libraries_count():
    assert is_torch_stack("torch") and is_torch_stack("triton")
    assert is_torch_stack("nvidia-cublas") and is_torch_stack("cuda-bindings")
    assert not is_torch_stack("torchvision") and not is_torch_stack("timm")


def test_sizes_sum_the_files_each_record_lists(tmp_path):
    _install(tmp_path, "torch", "2.0", {"torch/a.so": b"x" * 1000, "torch/b.py": b"y" * 24})
    _install(tmp_path, "nvidia-cublas", "13.0", {"nvidia/cublas/lib.so": b"z" * 500})
    _install(tmp_path, "timm", "1.0", {"timm/big.py": b"w" * 9999})
    (tmp_path / "torch" / "stray.bin").write_bytes(b"s" * 777)  # not in any RECORD
    sizes = stack_sizes(tmp_path)
    metadata_bytes = {
        name: sum(
            p.stat().st_size for p in tmp_path.glob(f"{name.replace('-', '_')}-*.dist-info/*")
        )
        for name in ("torch", "nvidia-cublas")
    }
    assert sizes == {
        "torch 2.0": 1024 + metadata_bytes["torch"],
        "nvidia-cublas 13.0": 500 + metadata_bytes["nvidia-cublas"],
    }


def test_a_whole_install_counts_every_distribution_but_the_installer(tmp_path):
    from benchmarks.install_size import install_sizes

    _install(tmp_path, "onnxruntime", "1.0", {"onnxruntime/a.so": b"o" * 300})
    _install(tmp_path, "numpy", "2.0", {"numpy/b.so": b"n" * 200})
    _install(tmp_path, "pip", "25.0", {"pip/c.py": b"p" * 900})
    assert set(install_sizes(tmp_path)) == {"onnxruntime 1.0", "numpy 2.0"}
